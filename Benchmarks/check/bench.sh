#!/usr/bin/env bash
# Benchmarks of `pinlab check` (release build). Prints medians; see RESULTS.md for the figures of record.
#
#   Benchmarks/check/bench.sh [RUNS]
#
# 1. The whole catalogue × all pin profiles × both engines with the in-process `correct` client:
#    wall time of the whole command (process start, PKI open, catalogue load, 70 servers, 420 cells),
#    and the runner's own duration from the JSON report.
# 2. Harness overhead with a command template (curl --pinnedpubkey, 3 profiles, both engines, --jobs J):
#    `pinlab check -- curl …` against running the very same curl command lines directly with `xargs -P J env`
#    against the same scenarios served by `pinlab serve --all`. Overhead = pinlab / direct − 1.
# Part 2 alternates the two sides run by run (paired medians), because this machine is shared and its load
# changes from minute to minute. Needs hyperfine, curl and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-10}"
jobs="${JOBS:-8}"
scratch="${SCRATCH:-.build-catalogue}"
work="$(mktemp -d)"
trap 'kill "${serve_pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

swift build -c release --scratch-path "$scratch" --product pinlab >/dev/null
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/pinlab"
dir="$work/pki"
"$bin" check --client correct --dir "$dir" --scenarios baseline >/dev/null   # creates the keys once

echo "== 1. correct client, whole catalogue, both engines (median of $runs)"
hyperfine --runs "$runs" --warmup 1 --export-json "$work/correct.json" --style none \
  "$bin check --client correct --dir $dir --format json --output $work/correct-report.json" >/dev/null
for i in $(seq 1 "$runs"); do
  "$bin" check --client correct --dir "$dir" --format json --output "$work/r$i.json" >/dev/null
done
python3 - "$work" "$runs" <<'EOF'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
h = json.load(open(f"{work}/correct.json"))["results"][0]
durations = [json.load(open(f"{work}/r{i}.json"))["durationSeconds"] for i in range(1, runs + 1)]
r = json.load(open(f"{work}/r1.json"))
print(f"cells: {r['summary']['total']} ({r['summary']['pass']} pass, {r['summary']['unsupported']} unsupported)")
print(f"whole command, median wall time: {statistics.median(h['times']):.3f} s (min {min(h['times']):.3f}, max {max(h['times']):.3f})")
print(f"runner only (report durationSeconds), median: {statistics.median(durations):.3f} s")
EOF

echo
echo "== 2. command template: pinlab check -- curl vs the same curl commands run directly (--jobs $jobs, median of $runs)"
"$bin" serve --all --dir "$dir" --manifest "$work/manifest.json" >/dev/null 2>&1 &
serve_pid=$!
for _ in $(seq 1 100); do [ -s "$work/manifest.json" ] && break; sleep 0.1; done
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
m = json.load(open(f"{work}/manifest.json"))
lines = []
for s in m["servers"]:
    pins = s["pins"]  # pinned leaf, backup key, intermediate, root (see ServeCommand.scenarioRequests)
    base = f"curl --silent --show-error --fail --output /dev/null --max-time 8 --noproxy * --cacert {s['trustFile']}"
    for profile in ("none", "leaf-spki", "leaf-spki+backup"):
        cmd = base
        if profile == "leaf-spki":
            cmd += " --pinnedpubkey " + pins[0]["curl"]
        elif profile == "leaf-spki+backup":
            cmd += " --pinnedpubkey " + pins[0]["curl"] + ";" + pins[1]["curl"]
        presents = {"mtls-required-valid": "client-valid", "mtls-required-untrusted": "client-untrusted",
                    "mtls-required-expired": "client-expired", "mtls-required-wrong-eku": "client-wrong-eku"}
        if s["id"] in presents:
            c = f"{work}/pki/certs/{presents[s['id']]}"
            cmd += f" --cert {c}/cert.pem --key {c}/key.pem"
        lines.append(cmd + " " + s["url"])
open(f"{work}/commands.txt", "w").write("\n".join(lines) + "\n")
print(f"{len(lines)} curl runs per repetition ({len(m['servers'])} servers, {len(m.get('unsupported', []))} unsupported)")
EOF
python3 - "$work" "$bin" "$dir" "$jobs" "$runs" <<'EOF2'
import json, statistics, subprocess, sys, time
work, binary, pki, jobs, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
template = ["curl", "--silent", "--show-error", "--fail", "--output", "/dev/null", "--max-time", "8", "--noproxy", "*",
            "--cacert", "{ca}", "[--pinnedpubkey {pins.curl}]", "[--cert {client.cert}]", "[--key {client.key}]", "{url}"]
def direct():
    with open(f"{work}/commands.txt") as f:
        t = time.perf_counter()
        subprocess.run(["xargs", "-P", jobs, "-L", "1", "env"], stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t
def pinlab(i):
    t = time.perf_counter()
    subprocess.run([binary, "check", "--dir", pki, "--jobs", jobs, "--profiles", "none,leaf-spki,leaf-spki+backup",
                    "--format", "json", "--output", f"{work}/curl-{i}.json", "--"] + template,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t
direct(); pinlab("warmup")
pairs = []
for i in range(runs):
    # Alternate the order so that neither side always runs right after the other.
    if i % 2 == 0:
        d = direct(); p = pinlab(i)
    else:
        p = pinlab(i); d = direct()
    r = json.load(open(f"{work}/curl-{i}.json"))
    pairs.append((d, p, r["durationSeconds"]))
ds, ps, rs = zip(*pairs)
r = json.load(open(f"{work}/curl-0.json"))
client_ms = [v["timings"]["clientMilliseconds"] for v in r["verdicts"] if v["verdict"] not in ("skipped", "unsupported")]
print(f"curl cells run by pinlab: {len(client_ms)} (verdicts: {r['summary']['pass']} pass, {r['summary']['fail']} fail); median curl process time {statistics.median(client_ms):.1f} ms")
print(f"direct (xargs -P {jobs} env curl …), median wall time: {statistics.median(ds):.3f} s")
print(f"pinlab check -- curl …, median wall time: {statistics.median(ps):.3f} s (runner only: {statistics.median(rs):.3f} s)")
print(f"harness overhead, median of {runs} paired runs: whole command {100 * statistics.median(p / d - 1 for d, p, _ in pairs):.1f} %, "
      f"runner only {100 * statistics.median(x / d - 1 for d, _, x in pairs):.1f} %")
EOF2
