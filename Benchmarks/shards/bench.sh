#!/usr/bin/env bash
# How level are the pieces of a sharded run? The whole catalogue (every scenario, profile and engine) checked with
# the curl command template, split in N shards (default 4) that run one after another on this machine, each timed
# alone; the figure is the slowest shard's time over the fastest's (the issue's bar: ≤ 1.3).
#
#   Benchmarks/shards/bench.sh [N] [ROUNDS]        (PINLAB=path/to/pinlab to use a given binary)
#
# Two cuts, interleaved round by round because the machine is shared:
#   estimated  each cell's cost estimated from its connections (no --shard-weights);
#   measured   cut by the cell costs of an unsharded run of the same command (--shard-weights whole.json).
# Prints, per cut, each shard's median seconds and the max/min ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-4}"
rounds="${2:-3}"
jobs="${JOBS:-2}"
bin="${PINLAB:-}"
if [ -z "$bin" ]; then
  swift build --product pinlab >/dev/null
  bin="$(swift build --show-bin-path)/pinlab"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dir="$work/pki"
curl_template=(curl -sf -o /dev/null --max-time 10 --resolve '{resolve}' --cacert '{ca}' '[--pinnedpubkey {pins.curl}]'
               '[--cert {client.cert}]' '[--key {client.key}]' '{url}')
run() { # run OUT [options…]: seconds of one pinlab check run
  local out="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" check --dir "$dir" --jobs "$jobs" --format json --output "$out" "$@" -- "${curl_template[@]}" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
echo "pinlab: $("$bin" --version | head -1); curl: $(curl --version | head -1 | cut -d' ' -f1-2); $n shards, $rounds rounds, --jobs $jobs"
whole_s=$(run "$work/whole.json")
echo "unsharded run: ${whole_s} s ($(python3 -c "import json;r=json.load(open('$work/whole.json'));print(r['summary']['total'],'cells')"))"
for r in $(seq 1 "$rounds"); do
  for cut in estimated measured; do
    for k in $(seq 1 "$n"); do
      extra=(); [ "$cut" = measured ] && extra=(--shard-weights "$work/whole.json")
      s=$(run "$work/$cut-$k-$r.json" --shard "$k/$n" "${extra[@]}")
      echo "$cut $k $r $s" >> "$work/times"
    done
  done
done
python3 - "$work" "$n" <<'PY'
import json, statistics, sys, collections
work, n = sys.argv[1], int(sys.argv[2])
t = collections.defaultdict(list)
for line in open(f"{work}/times"):
    cut, k, r, s = line.split()
    t[(cut, int(k))].append(float(s))
for cut in ("estimated", "measured"):
    med = [statistics.median(t[(cut, k)]) for k in range(1, n + 1)]
    cells = [json.load(open(f"{work}/{cut}-{k}-1.json"))["summary"]["total"] for k in range(1, n + 1)]
    print(f"{cut:9}: shard seconds (median) {' '.join(f'{m:.2f}' for m in med)}; cells {' '.join(map(str, cells))}; "
          f"slowest/fastest {max(med) / min(med):.2f}")
# The FNV-1a hash split that this cut replaced, modelled on the unsharded run's cell times (not run).
w = json.load(open(f"{work}/whole.json"))
loads = [0.0] * n
for v in w["verdicts"]:
    h = 0xcbf29ce484222325
    for b in f"{v['scenario']}/{v['profile']}/{v['engine']}".encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    loads[h % n] += v.get("timings", {}).get("clientMilliseconds", 0)
print(f"hash split (modelled from the unsharded run's client times): {' '.join(f'{l / 1000:.2f}' for l in loads)} s; "
      f"slowest/fastest {max(loads) / min(loads):.2f}")
PY
