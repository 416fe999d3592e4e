#!/usr/bin/env bash
# The catalogue against its floor, in one run on this machine (release build):
#
#   (a) `pinlab check --client correct` over the whole catalogue, both engines: wall and CPU time (utime + stime of
#       the process, from /usr/bin/time), median of ROUNDS rounds; the handshakes and server starts it makes are
#       counted from its JSON report.
#   (b) the floor: the CPU of one handshake pair on this machine — the engine's server (`pinlab serve`, utime +
#       stime from /proc) plus a C OpenSSL client that verifies the chain and the name and sends one GET
#       (Benchmarks/serve/loadgen.c, one thread, its own rusage) — for each engine, TLS 1.3, the P-256 leaf-v1;
#       and the time of one server start with a configuration not served before (pinlab-serve-bench startup:
#       new_config_start_ms, a wall time on one thread: CPU bound on a quiet machine). Medians of ROUNDS rounds,
#       interleaved with (a).
#       floor = handshakes × pair CPU (mean of the two engines) + server starts × start time.
#
# Prints "catalogue / floor = X.XX" (CPU) and the load average before and after. Nothing is written to the repo.
#
# Usage: Benchmarks/catalogue/bench.sh [ROUNDS=5] [PAIR_SECONDS=2]
#   env: SCRATCH (scratch path of the release build, default .build-bench-catalogue)
#        PINLAB (a pinlab binary to measure instead of building one; pinlab-serve-bench is still built unless
#        SERVE_BENCH names one), BASELINE (a second pinlab binary measured in the same rounds, e.g. an older
#        build, for a before/after on the same load)
set -euo pipefail
ROUNDS=${1:-5}
PAIR_SECS=${2:-2}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
SCRATCH=${SCRATCH:-.build-bench-catalogue}

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -x /usr/bin/time ] || need+=(time)
pkg-config --exists openssl 2>/dev/null || need+=(libssl-dev pkg-config)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

W=$(mktemp -d /tmp/pinlab-catalogue-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.2
  rm -rf "$W"
}
trap cleanup EXIT

if [ -z "${PINLAB:-}" ] || [ -z "${SERVE_BENCH:-}" ]; then
  echo "bench: building release binaries (scratch path $SCRATCH)"
  BIN=$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)
  if [ -z "${PINLAB:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product pinlab >/dev/null
    PINLAB="$BIN/pinlab"
  fi
  if [ -z "${SERVE_BENCH:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product pinlab-serve-bench >/dev/null
    SERVE_BENCH="$BIN/pinlab-serve-bench"
  fi
fi
gcc -O2 -Wall -o "$W/loadgen" Benchmarks/serve/loadgen.c -lssl -lcrypto -lpthread

PKI="$W/pki"
"$PINLAB" pki init --dir "$PKI" >/dev/null
CA="$PKI/certs/lab-root/cert.pem"
# The first run makes every key and certificate of the catalogue (not measured).
"$PINLAB" check --client correct --dir "$PKI" --format json --output "$W/warmup.json" >/dev/null || true
[ -n "${BASELINE:-}" ] && { "$BASELINE" check --client correct --dir "$PKI" --format json --output "$W/warmup-b.json" >/dev/null || true; }

P_OSSL=$((20000 + RANDOM % 20000)); P_GNUTLS=$((P_OSSL + 1))
"$PINLAB" serve --dir "$PKI" --identity leaf-v1 --engine openssl --port "$P_OSSL" >"$W/ossl.log" 2>&1 &
PID_OSSL=$!; PIDS+=("$PID_OSSL")
"$PINLAB" serve --dir "$PKI" --identity leaf-v1 --engine gnutls --port "$P_GNUTLS" >"$W/gnutls.log" 2>&1 &
PID_GNUTLS=$!; PIDS+=("$PID_GNUTLS")
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$P_OSSL") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$P_GNUTLS") 2>/dev/null && break
  sleep 0.1
done

# utime+stime (clock ticks) of a process.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

# One catalogue run of binary $1 into report $2; appends "wall user sys" to $3.
catalogue() {
  /usr/bin/time -f "%e %U %S" -o "$W/time.txt" "$1" check --client correct --dir "$PKI" --format json \
    --output "$2" >/dev/null || true
  [ -s "$2" ] || { echo "bench: $1 wrote no report"; exit 1; }
  cat "$W/time.txt" >>"$3"
}

# One pair measurement against server pid $1 on port $2 (name $3): "name handshakes server_us client_us".
pair() {
  local c0 c1 out n
  c0=$(cpu_ticks "$1")
  out=$(/usr/bin/time -f "rusage %U %S" "$W/loadgen" 127.0.0.1 "$2" "$CA" 1.3 1 "$PAIR_SECS" 2>&1)
  c1=$(cpu_ticks "$1")
  n=$(echo "$out" | sed -nE 's/.*handshakes=([0-9]+).*/\1/p')
  local cu cs
  read -r _ cu cs < <(echo "$out" | grep '^rusage')
  # +1 for the load generator's warm-up request
  python3 -c "import sys; n=int(sys.argv[2])+1; print(sys.argv[1], n, (int(sys.argv[3])-int(sys.argv[4]))*1e6/int(sys.argv[5])/n, (float(sys.argv[6])+float(sys.argv[7]))*1e6/n)" \
    "$3" "$n" "$c1" "$c0" "$TICK" "$cu" "$cs" >>"$W/pairs.txt"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench: load average before: $LOAD_BEFORE; $(nproc) cores; rounds=$ROUNDS, pair seconds=$PAIR_SECS"
: >"$W/cat.txt"; : >"$W/base.txt"; : >"$W/pairs.txt"; : >"$W/starts.txt"; : >"$W/loads.txt"
for r in $(seq 1 "$ROUNDS"); do
  catalogue "$PINLAB" "$W/report.json" "$W/cat.txt"
  [ -n "${BASELINE:-}" ] && catalogue "$BASELINE" "$W/report-b.json" "$W/base.txt"
  pair "$PID_OSSL" "$P_OSSL" openssl
  pair "$PID_GNUTLS" "$P_GNUTLS" gnutls
  "$SERVE_BENCH" startup "$PKI" 50 | sed -nE 's/.*engine=([a-z]+).* new_config_start_ms=([0-9.]+).*/\1 \2/p' >>"$W/starts.txt"
  cut -d' ' -f1 /proc/loadavg >>"$W/loads.txt"
  echo "bench: round $r done (load $(cut -d' ' -f1 /proc/loadavg))"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench: load average after: $LOAD_AFTER"

python3 - "$W" "${BASELINE:+yes}" <<'PY'
import json, statistics, sys
w, has_base = sys.argv[1], sys.argv[2] == "yes"
med = statistics.median

def runs(path):
    rows = [tuple(map(float, l.split())) for l in open(path) if l.strip()]
    return [r[0] for r in rows], [r[1] + r[2] for r in rows]

def counts(path):
    """Handshakes (connections a server saw, not counting an HTTP/2 request on a connection already open) and
    server starts (one per scenario and engine served; one per party per cell of several connections)."""
    r = json.load(open(path))
    handshakes = starts = 0
    served = set()
    for v in r["verdicts"]:
        if v["verdict"] in ("unsupported", "skipped"):
            continue
        if "steps" in v:
            starts += len({s.get("party", "genuine") for s in v["steps"]})
            for s in v["steps"]:
                e = s.get("evidence") or {}
                if e.get("connected") and "opened in an earlier step" not in (e.get("requestLine") or ""):
                    handshakes += 1
        else:
            served.add((v["scenario"], v["engine"]))
            if (v.get("evidence") or {}).get("connected"):
                handshakes += 1
    return len(r["verdicts"]), handshakes, starts + len(served)

cells, handshakes, starts = counts(f"{w}/report.json")
walls, cpus = runs(f"{w}/cat.txt")
pairs = [l.split() for l in open(f"{w}/pairs.txt") if l.strip()]
pair_us = {}
for eng in ("openssl", "gnutls"):
    rows = [p for p in pairs if p[0] == eng]
    pair_us[eng] = (med(float(p[2]) for p in rows), med(float(p[3]) for p in rows))
starts_ms = {}
for l in open(f"{w}/starts.txt"):
    if l.strip():
        eng, ms = l.split()
        starts_ms.setdefault(eng, []).append(float(ms))
start_ms = statistics.mean(med(v) for v in starts_ms.values()) if starts_ms else 0.0
pair_cpu_us = statistics.mean(s + c for s, c in pair_us.values())
floor_s = handshakes * pair_cpu_us / 1e6 + starts * start_ms / 1e3
loads = [float(l) for l in open(f"{w}/loads.txt") if l.strip()]

print()
print(f"catalogue: {cells} cells, {handshakes} handshakes, {starts} server starts")
print(f"catalogue, pinlab check --client correct: median wall {med(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f}), "
      f"median CPU {med(cpus):.3f} s (min {min(cpus):.3f}, max {max(cpus):.3f}) = {1e3 * med(cpus) / cells:.2f} ms per cell")
if has_base:
    bw, bc = runs(f"{w}/base.txt")
    print(f"baseline binary, same rounds:        median wall {med(bw):.3f} s, median CPU {med(bc):.3f} s "
          f"= {1e3 * med(bc) / cells:.2f} ms per cell (this / baseline CPU: {med(cpus) / med(bc):.2f})")
for eng, (s, c) in pair_us.items():
    print(f"handshake pair, {eng} engine, TLS 1.3, P-256: server {s:.0f} µs + client {c:.0f} µs CPU = {s + c:.0f} µs")
print(f"server start (new configuration), mean of the engines' medians: {start_ms:.3f} ms")
print(f"floor: {handshakes} × {pair_cpu_us:.0f} µs + {starts} × {start_ms:.3f} ms = {floor_s:.3f} s CPU")
print(f"catalogue / floor = {med(cpus) / floor_s:.2f}")
if has_base:
    print(f"baseline / floor = {med(bc) / floor_s:.2f}")
print(f"load average during the rounds: median {med(loads):.2f}, max {max(loads):.2f} (1-minute)")
PY
