#!/usr/bin/env bash
# Fixture-server benchmark, all in one run on loopback:
#   1. full-handshake rate (a new TCP connection and TLS handshake per request, no resumption), P-256 leaf
#      (leaf-v1 of the lab PKI, chain leaf + intermediate), TLS 1.3 and TLS 1.2, the same load generator for all:
#        OpenSSL engine (pinlab serve --engine openssl)  vs  nginx (2 workers, same certificate and key)
#        GnuTLS engine  (pinlab serve --engine gnutls)   vs  gnutls-serv (same certificate and key)
#      Medians over rounds (servers interleaved in every round), ratios, and server CPU µs per handshake
#      (utime+stime of the server processes from /proc, divided by completed requests).
#   2. time from FixtureServer.start to the first completed handshake (pinlab-serve-bench startup).
#   3. RSS with N servers per engine at once (pinlab-serve-bench rss).
#
# Usage: Benchmarks/serve/run.sh [ROUNDS=5] [SECONDS=3]        env: THREADS=4 (client threads), RSS_SERVERS=30
# Installs what it needs with apt-get when missing. Prints medians and ratios; nothing is written to the repo.
set -euo pipefail
ROUNDS=${1:-5}
SECS=${2:-3}
THREADS=${THREADS:-4}
RSS_SERVERS=${RSS_SERVERS:-30}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

need=()
command -v nginx       >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v gnutls-serv >/dev/null 2>&1 || need+=(gnutls-bin)
command -v gcc         >/dev/null 2>&1 || need+=(gcc)
command -v pkg-config  >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || need+=(libssl-dev)
pkg-config --exists gnutls  2>/dev/null || need+=(libgnutls28-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

W=$(mktemp -d /tmp/pinlab-serve-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$W/nginx.pid" ] && kill "$(cat "$W/nginx.pid")" 2>/dev/null || true
  sleep 0.3
  rm -rf "$W"
}
trap cleanup EXIT

SCRATCH=${SCRATCH:-.build-bench}
echo "bench: building release binaries (scratch path $SCRATCH)"
swift build -c release --scratch-path "$SCRATCH" --product pinlab >/dev/null
swift build -c release --scratch-path "$SCRATCH" --product pinlab-serve-bench >/dev/null
BIN=$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)
gcc -O2 -Wall -o "$W/loadgen" Benchmarks/serve/loadgen.c -lssl -lcrypto -lpthread

"$BIN/pinlab" pki init --dir "$W/pki" >/dev/null
CERTS="$W/pki/certs"
CA="$CERTS/lab-root/cert.pem"
CHAIN="$CERTS/leaf-v1/chain.pem"
KEY="$CERTS/leaf-v1/key.pem"
openssl x509 -in "$CERTS/leaf-v1/cert.pem" -noout -text | grep -q "prime256v1\|P-256" || { echo "leaf-v1 is not P-256"; exit 1; }

P_OSSL=$((20000 + RANDOM % 20000)); P_NGINX=$((P_OSSL + 1)); P_GNUTLS=$((P_OSSL + 2)); P_GSERV=$((P_OSSL + 3))

"$BIN/pinlab" serve --dir "$W/pki" --identity leaf-v1 --engine openssl --port "$P_OSSL" >"$W/ossl.log" 2>&1 &
PID_OSSL=$!; PIDS+=("$PID_OSSL")
"$BIN/pinlab" serve --dir "$W/pki" --identity leaf-v1 --engine gnutls --port "$P_GNUTLS" >"$W/gnutls.log" 2>&1 &
PID_GNUTLS=$!; PIDS+=("$PID_GNUTLS")
gnutls-serv --http --x509certfile "$CHAIN" --x509keyfile "$KEY" -p "$P_GSERV" --noticket -q >"$W/gserv.log" 2>&1 &
PID_GSERV=$!; PIDS+=("$PID_GSERV")
cat >"$W/nginx.conf" <<EOF
worker_processes 2;
pid $W/nginx.pid;
error_log $W/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $W; proxy_temp_path $W; fastcgi_temp_path $W; uwsgi_temp_path $W; scgi_temp_path $W;
  keepalive_timeout 0;
  server {
    listen 127.0.0.1:$P_NGINX ssl;
    ssl_certificate $CHAIN;
    ssl_certificate_key $KEY;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache off;
    ssl_session_tickets off;
    location / { default_type application/json; return 200 '{"ok":true}\n'; }
  }
}
EOF
"$NGINX" -c "$W/nginx.conf" -e "$W/nginx-error.log"
sleep 1
NGINX_MASTER=$(cat "$W/nginx.pid")

# utime+stime (clock ticks) of a process and its children processes (nginx workers).
cpu_ticks() {
  local total=0 p
  for p in "$@" $(for q in "$@"; do pgrep -P "$q" || true; done); do
    [ -r "/proc/$p/stat" ] || continue
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$total"
}
TICK=$(getconf CLK_TCK)

echo "bench: load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; rounds=$ROUNDS seconds=$SECS client threads=$THREADS"
RESULTS="$W/results.tsv"
for r in $(seq 1 "$ROUNDS"); do
  for v in 1.3 1.2; do
    for s in openssl-engine nginx gnutls-engine gnutls-serv; do
      case $s in
        openssl-engine) port=$P_OSSL; pids=($PID_OSSL) ;;
        nginx)          port=$P_NGINX; pids=($NGINX_MASTER) ;;
        gnutls-engine)  port=$P_GNUTLS; pids=($PID_GNUTLS) ;;
        gnutls-serv)    port=$P_GSERV; pids=($PID_GSERV) ;;
      esac
      c0=$(cpu_ticks "${pids[@]}")
      out=$("$W/loadgen" 127.0.0.1 "$port" "$CA" "$v" "$THREADS" "$SECS")
      c1=$(cpu_ticks "${pids[@]}")
      n=$(echo "$out" | sed -E 's/.*handshakes=([0-9]+).*/\1/')
      e=$(echo "$out" | sed -E 's/.*errors=([0-9]+).*/\1/')
      rate=$(echo "$out" | sed -E 's/.*rate=([0-9.]+).*/\1/')
      # +1 for the load generator's warm-up request
      printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$r" "$v" "$s" "$rate" "$(( (c1 - c0) * 1000000 / TICK / (n + 1) ))" "$e" >>"$RESULTS"
    done
  done
  echo "bench: round $r done"
done
echo "bench: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$RESULTS" <<'PY'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
rate = collections.defaultdict(list); cpu = collections.defaultdict(list); err = collections.Counter()
for r, v, s, hs, us, e in rows:
    rate[(v, s)].append(float(hs)); cpu[(v, s)].append(float(us)); err[(v, s)] += int(e)
med = lambda xs: statistics.median(xs)
print()
print("| TLS | server | handshakes/s (median) | min–max | server CPU µs/handshake (median) | errors |")
print("|---|---|---:|---:|---:|---:|")
for v in ("1.3", "1.2"):
    for s in ("openssl-engine", "nginx", "gnutls-engine", "gnutls-serv"):
        xs = rate[(v, s)]
        print(f"| {v} | {s} | {med(xs):.0f} | {min(xs):.0f}–{max(xs):.0f} | {med(cpu[(v, s)]):.0f} | {err[(v, s)]} |")
print()
print("| TLS | comparison | rate ratio (engine / reference) | CPU ratio (engine / reference) |")
print("|---|---|---:|---:|")
for v in ("1.3", "1.2"):
    for a, b in (("openssl-engine", "nginx"), ("gnutls-engine", "gnutls-serv")):
        print(f"| {v} | {a} vs {b} | {med(rate[(v, a)]) / med(rate[(v, b)]):.2f} | {med(cpu[(v, a)]) / med(cpu[(v, b)]):.2f} |")
PY

echo
echo "bench: FixtureServer.start to first completed handshake (in-process client, milliseconds, medians):"
"$BIN/pinlab-serve-bench" startup "$W/pki" 200
echo
echo "bench: RSS with $RSS_SERVERS servers per engine at once (one handshake each):"
"$BIN/pinlab-serve-bench" rss "$W/pki" "$RSS_SERVERS"
