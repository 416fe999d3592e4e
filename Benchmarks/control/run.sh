#!/usr/bin/env bash
# Control API benchmarks on loopback: latency (median, p99) of GET /scenarios and POST /servers + DELETE, the time to
# answer request lines of 1 KiB … 1 MiB (431 above 8 KiB), and GET /health while 10 clients send 1 MiB URLs.
#
#   Benchmarks/control/run.sh                     # this checkout's pinlab (.build/debug/pinlab)
#   PINLAB_OLD=/path/to/old/pinlab Benchmarks/control/run.sh   # and an older pinlab for comparison
#
# REQUESTS (default 2000) requests per latency figure. Bounded: an old server that parses heads quadratically is
# given only the sizes it answers within OLD_TIMEOUT seconds (default 30), and is killed at the end whatever it does.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=Benchmarks/control/control_bench.py
new=${PINLAB:-.build/debug/pinlab}
[ -x "$new" ] || swift build --product pinlab
requests=${REQUESTS:-2000}
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; sleep 2; kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

run_one() {  # NAME BINARY SIZES
  local name=$1 bin=$2 sizes=$3
  rm -f "$work/manifest.json"
  "$bin" serve --control 127.0.0.1:0 --manifest "$work/manifest.json" >"$work/stdout" 2>"$work/stderr" &
  pid=$!
  local port= token=
  for _ in $(seq 1 1200); do
    port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"]["port"])' "$work/manifest.json" 2>/dev/null) && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "$name: no manifest"; cat "$work/stderr"; exit 1; }
  token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"].get("token") or "")' "$work/manifest.json")
  echo "== $name ($bin), port $port"
  echo "latency ($requests requests each, ms): $(python3 $bench latency "$port" ${token:+--token "$token"} --requests "$requests")"
  echo "request line → answer (ms): $(timeout "${OLD_TIMEOUT:-30}" python3 $bench oversized "$port" --sizes "$sizes" --repeat 5 --timeout "${OLD_TIMEOUT:-30}" || echo '(timed out)')"
  echo "GET /health while 10 clients send 1 MiB URLs (ms): $(timeout 60 python3 $bench health-under-flood "$port" --clients 10 --seconds 5 || echo '(timed out)')"
  local stopped=no
  kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || { stopped=yes; break; }; sleep 0.1; done
  echo "SIGTERM after the flood: stopped within 5 s: $stopped"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
}

run_one new "$new" 1024,16384,262144,1048576
if [ -n "${PINLAB_OLD:-}" ]; then
  run_one old "$PINLAB_OLD" "${OLD_SIZES:-1024,16384}"
fi
