#!/usr/bin/env bash
# `pinlab audit` on a generated network_security_config.xml of DOMAINS domain-configs (two random SHA-256 pins and
# an expiration a year away each, plus a base-config and debug-overrides): the median wall time of RUNS runs of the
# whole process, in milliseconds, next to the start-up alone (the same binary refusing a bad option). The machine's
# load average is printed too: on a shared machine the medians move with it, the minima much less.
# Usage: Benchmarks/audit/bench.sh [PINLAB] [DOMAINS] [RUNS]     (default .build/debug/pinlab 100 31)
set -euo pipefail
pinlab=${1:-.build/debug/pinlab} domains=${2:-100} runs=${3:-31}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$domains" > "$dir/network_security_config.xml" <<'PY'
import base64, datetime, os, sys
n = int(sys.argv[1])
exp = (datetime.date.today() + datetime.timedelta(days=365)).isoformat()
print('<?xml version="1.0" encoding="utf-8"?>\n<network-security-config>')
print('    <base-config cleartextTrafficPermitted="false"><trust-anchors><certificates src="system" /></trust-anchors></base-config>')
for i in range(n):
    pins = "".join(f'<pin digest="SHA-256">{base64.b64encode(os.urandom(32)).decode()}</pin>' for _ in range(2))
    print(f'    <domain-config><domain includeSubdomains="true">api{i}.example{i}.test</domain>'
          f'<pin-set expiration="{exp}">{pins}</pin-set></domain-config>')
print('    <debug-overrides><trust-anchors><certificates src="user" /></trust-anchors></debug-overrides>')
print('</network-security-config>')
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
"$pinlab" audit "$dir/network_security_config.xml" | tail -1
python3 - "$pinlab" "$dir/network_security_config.xml" "$runs" <<'PY'
import statistics, subprocess, sys, time
pinlab, file, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def run(args):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(args, capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
    return times
base = run([pinlab, "audit", "--soon", "x"])  # exits 2 on the option: process start-up and argument parsing only
print(f"start-up only: median {statistics.median(base):.1f} ms, min {min(base):.1f} ms over {runs} runs")
for fmt in ("text", "json"):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run([pinlab, "audit", "--format", fmt, file], capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
        assert r.returncode == 0, r.stderr
    print(f"{fmt}: median {statistics.median(times):.1f} ms, min {min(times):.1f} ms, max {max(times):.1f} ms over {runs} runs")
PY
