#!/usr/bin/env bash
# HTTP/2 fixture server against nginx's http2 module, with the same load generator (h2load), side by side.
# Usage: Benchmarks/h2/run.sh PINLAB [ROUNDS] [REQUESTS]
#   PINLAB: the pinlab binary (e.g. .build/release/pinlab); ROUNDS: interleaved rounds (default 5, the median is
#   reported); REQUESTS: per h2load run (default 20000; short runs are mostly the ten handshakes and noise).
# Environment:
#   PINLAB_BASELINE=OTHER-PINLAB  also measures that binary in the same rounds (before/after side by side).
#   SERVER_CPUS=LIST, LOAD_CPUS=LIST  taskset CPU lists: every server (pinlab and nginx) runs on SERVER_CPUS, h2load on
#   LOAD_CPUS (defaults: the last CPU for the servers, the others for h2load; one CPU: both on it).
# Fair by construction: both sides pinned to the same CPUs, nginx with as many worker processes as one fixture server
# has worker threads (counted from the running process, threads `pl<port>-N`), the same h2load command line, rounds
# interleaved in a rotating order, the median of all rounds. Every h2load run must complete all its requests.
# Needs nginx (apt-get install nginx-light) and h2load (apt-get install nghttp2-client). Everything listens on
# 127.0.0.1 only; nginx runs in the foreground from a scratch folder and is stopped at the end.
set -euo pipefail
pinlab="$(realpath "$1")"; rounds="${2:-5}"; requests="${3:-20000}"
baseline="${PINLAB_BASELINE:+$(realpath "$PINLAB_BASELINE")}"
last=$(($(nproc) - 1))
server_cpus="${SERVER_CPUS:-$last}"
if [ -n "${LOAD_CPUS:-}" ]; then load_cpus="$LOAD_CPUS"; elif [ "$last" -gt 0 ]; then load_cpus="0-$((last - 1))"; else load_cpus=0; fi
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$pinlab" pki init --dir "$work/pki" >/dev/null
port() { python3 -c "import json,sys; print([s['port'] for s in json.load(open(sys.argv[1]))['servers'] if s['engine']==sys.argv[2]][0])" "$1" "$2"; }
declare -A portOf
start_pinlab() {  # NAME BINARY: pinlab serve --http2 --engine both, pinned; NAME-openssl and NAME-gnutls
  taskset -c "$server_cpus" "$2" serve --dir "$work/pki" --identity leaf-v1 --http2 --engine both \
    --manifest "$work/$1.json" >"$work/$1.log" 2>&1 &
  for _ in $(seq 300); do [ -s "$work/$1.json" ] && break; sleep 0.1; done
  portOf[$1-openssl]=$(port "$work/$1.json" openssl); portOf[$1-gnutls]=$(port "$work/$1.json" gnutls)
  pids[$1]=$!
}
declare -A pids
start_pinlab pinlab "$pinlab"
names="pinlab-openssl pinlab-gnutls nginx"
if [ -n "$baseline" ]; then start_pinlab baseline "$baseline"; names="$names baseline-openssl baseline-gnutls"; fi
# One fixture server's worker threads, as running: nginx gets as many worker processes.
workers=$(grep -l "^pl${portOf[pinlab-openssl]}-" /proc/"${pids[pinlab]}"/task/*/comm 2>/dev/null | wc -l)
[ "$workers" -ge 1 ] || workers=2
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
portOf[nginx]=$nport
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
worker_processes $workers;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  # nginx closes an HTTP/2 connection after 1000 requests by default; the fixture server never does.
  keepalive_requests 100000000;
  client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy; fastcgi_temp_path $work/nginx/fcgi;
  uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:$nport ssl http2;
    ssl_certificate $work/pki/certs/leaf-v1/fullchain.pem;
    ssl_certificate_key $work/pki/certs/leaf-v1/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { return 200 "ok\n"; }
  }
}
CONF
taskset -c "$server_cpus" nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$nport) 2>/dev/null && break; sleep 0.1; done
# One h2load run: prints requests/s; exits non-zero unless every request succeeded.
rate() {
  taskset -c "$load_cpus" h2load -t 1 -n "$requests" -c 10 -m 10 "https://127.0.0.1:$1/" 2>/dev/null |
    awk -v want="$requests" '/^finished in/ {gsub(",", ""); r = $4} /^requests:/ {ok = $8}
      END {print r; if (ok != want) {print "only " ok " of " want " requests succeeded" > "/dev/stderr"; exit 1}}'
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); servers on CPU $server_cpus, h2load on CPU $load_cpus; nginx: $workers workers"
for name in $names; do rate "${portOf[$name]}" >/dev/null; done  # warm-up, not counted
declare -A all
set -- $names
n=$#
for r in $(seq "$rounds"); do
  # A rotating order, so that no contestant always follows the same one.
  for i in $(seq 0 $((n - 1))); do
    eval "name=\${$(((r + i) % n + 1))}"
    all[$name]+="$(rate "${portOf[$name]}") "
  done
done
median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.0f}')" $1; }
nm=$(median "${all[nginx]}")
echo "h2load -t 1 -n $requests -c 10 -m 10, $rounds interleaved rounds; requests/s (median), ratio to nginx"
for name in $names; do
  m=$(median "${all[$name]}")
  echo "$name  $m req/s  (${all[$name]})  $(python3 -c "print(f'{$m/$nm:.2f}x nginx')")"
done
# The same fixture server over HTTP/1.1 (its h1 path answers one request per connection: a handshakes/s figure).
h1=$(taskset -c "$load_cpus" h2load --h1 -n $((requests / 10)) -c 10 "https://127.0.0.1:${portOf[pinlab-openssl]}/" 2>/dev/null | awk '/^finished in/ {gsub(",", ""); print $4}')
echo "pinlab-openssl over http/1.1 (h2load --h1 -n $((requests / 10)) -c 10): $h1 req/s"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
