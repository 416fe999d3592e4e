#!/usr/bin/env bash
# The lab OCSP responder against OpenSSL's, on the same requests, side by side: `pinlab serve
# --revocation-responder` and `openssl ocsp -index … -port`, each asked for leaf-ocsp (good) by one request made
# once with `openssl ocsp -reqout`; the load is h2load over HTTP/1.1 (one client unless CLIENTS says more), one POST
# per connection, REQUESTS per round, in ROUNDS interleaved rounds. `openssl ocsp -port` takes no address and binds every
# interface, so the whole run happens in a network namespace of its own with only `lo` (unshare -rn): nothing
# listens outside.
# Usage: Benchmarks/ocsp/run.sh PINLAB [ROUNDS] [REQUESTS]   (defaults: 5 rounds of 5000; the median is reported)
# Environment:
#   PINLAB_BASELINE=OTHER-PINLAB  also measures that binary in the same rounds (before/after side by side).
#   SERVER_CPUS=LIST, LOAD_CPUS=LIST  taskset CPU lists: both responders run on SERVER_CPUS, the load on LOAD_CPUS
#   (defaults: the last CPU for the responders, the others for the load; one CPU: both on it).
#   CLIENTS=N  concurrent h2load clients (default 1).
# Fair by construction: both responders pinned to the same CPUs, the same load generator and request, rounds
# interleaved in a rotating order, every answer of every round a 2xx. What each side does per request, both on one
# thread when the request has arrived whole: `openssl ocsp` (one process) reads it, looks the serial up in its
# index and signs a fresh response (P-256, the intermediate's key, its certificate included); the lab responder
# parses it, finds the identity and signs a response (P-256, the same key, by key hash) on its accepting thread — a
# request that has not wholly arrived goes to a connection thread of its own — and serves that response again to the
# same request within the same second (its times are whole seconds, so a fresh one would say the same but for the
# ECDSA signature's randomness): here nearly every response is one already signed, where `openssl ocsp` signs each.
# Measure a build without that cache with PINLAB_BASELINE to see the cost of signing each one.
set -euo pipefail
[ -n "${PINLAB_OCSP_BENCH_DEBUG:-}" ] && set -x
if [ "${PINLAB_OCSP_BENCH_INNER:-}" != 1 ]; then
  exec env PINLAB_OCSP_BENCH_INNER=1 unshare -rn bash "$0" "$@"
fi
ip link set lo up 2>/dev/null || true
pinlab="$(realpath "$1")"; rounds="${2:-5}"; requests="${3:-5000}"
baseline="${PINLAB_BASELINE:+$(realpath "$PINLAB_BASELINE")}"
last=$(($(nproc) - 1))
server_cpus="${SERVER_CPUS:-$last}"
if [ -n "${LOAD_CPUS:-}" ]; then load_cpus="$LOAD_CPUS"; elif [ "$last" -gt 0 ]; then load_cpus="0-$((last - 1))"; else load_cpus=0; fi
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$pinlab" pki init --dir "$work/pki" >/dev/null
c="$work/pki/certs"
openssl ocsp -no_nonce -issuer "$c/lab-intermediate-a/cert.pem" -cert "$c/leaf-ocsp/cert.pem" -reqout "$work/req.der" >/dev/null
start_pinlab() {  # LOG BINARY [PKI]: sets url to the responder's URL for lab-intermediate-a
  taskset -c "$server_cpus" "$2" serve --dir "${3:-$work/pki}" --identity leaf-ocsp --engine openssl --revocation-responder \
    >"$work/$1" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "^revocation: http" "$work/$1" && break; sleep 0.1; done
  url="$(sed -n 's/^revocation: \(http:\/\/[0-9.:]*\).*/\1/p' "$work/$1")/lab-intermediate-a"
}
start_pinlab serve.log "$pinlab"; lab_url="$url"; lab_pid=$pid
# The baseline (an older build, whose built-in spec may differ) gets a PKI folder and a request of its own: opened by
# it, the newer build's folder would be re-issued from the older spec under the newer responder's feet.
if [ -n "$baseline" ]; then
  "$baseline" pki init --dir "$work/pki-base" >/dev/null
  cb="$work/pki-base/certs"
  openssl ocsp -no_nonce -issuer "$cb/lab-intermediate-a/cert.pem" -cert "$cb/leaf-ocsp/cert.pem" \
    -reqout "$work/req-base.der" >/dev/null
  start_pinlab baseline.log "$baseline" "$work/pki-base"; base_url="$url"; base_pid=$pid
fi
# OpenSSL's responder: an index with leaf-ocsp as valid, signed by the intermediate itself.
serial=$(openssl x509 -in "$c/leaf-ocsp/cert.pem" -noout -serial | cut -d= -f2)
subject=$(openssl x509 -in "$c/leaf-ocsp/cert.pem" -noout -subject -nameopt compat | sed 's/^subject=//')
printf 'V\t351231235959Z\t\t%s\tunknown\t%s\n' "$serial" "$subject" > "$work/index.txt"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c "$server_cpus" openssl ocsp -index "$work/index.txt" -port "$port" -rsigner "$c/lab-intermediate-a/cert.pem" \
  -rkey "$c/lab-intermediate-a/key.pem" -CA "$c/lab-intermediate-a/cert.pem" -nmin 5 >"$work/ocsp.log" 2>&1 &
ossl_pid=$!
# Wait for its listening socket without connecting (a probe connection that sends no request ends it).
listening() { ss -ltn 2>/dev/null | grep -q "127.0.0.1:$port \|\*:$port \|0.0.0.0:$port "; }
for _ in $(seq 50); do listening && break; sleep 0.1; done
listening || { echo "openssl ocsp did not start:"; cat "$work/ocsp.log"; exit 1; }
# One round: h2load over HTTP/1.1, CLIENTS (default 1: sequential) clients, REQUESTS requests, each a POST of the
# same OCSP request on a connection of its own (both responders close after each answer); prints responses/s, and
# fails unless every request got a 2xx. Also the responder's CPU time per response (user + system, of the whole
# process PID, from /proc), which a loaded machine disturbs far less than the rate.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
load() {
  local before; before=$(cpu_ticks "$2")
  local request="$work/req.der"; [ "$3" = baseline ] && request="$work/req-base.der"
  taskset -c "$load_cpus" h2load --h1 -c "${CLIENTS:-1}" -n "$requests" -d "$request" \
    -H 'Content-Type: application/ocsp-request' "$1" 2>/dev/null |
    awk '/^finished in/ {gsub(",", ""); r = $4} /^requests:/ {done = $6}
      /^status codes:/ {two = $3}
      END {printf "%.0f\n", r; if (done == 0 || two != done) {print "only " two " of " done " answers were a 2xx" > "/dev/stderr"; exit 1}}'
  python3 -c "import os,sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf(\"SC_CLK_TCK\") / int(sys.argv[3]) * 1e6:.0f}')" \
    "$before" "$(cpu_ticks "$2")" "$requests" >>"$work/cpu-$3"
}
declare -A all urlOf=([pinlab]="$lab_url" [openssl]="http://127.0.0.1:$port/") pidOf=([pinlab]=$lab_pid [openssl]=$ossl_pid)
names="pinlab openssl"
if [ -n "$baseline" ]; then urlOf[baseline]="$base_url"; pidOf[baseline]=$base_pid; names="pinlab openssl baseline"; fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); responders on CPU $server_cpus, load on CPU $load_cpus"
set -- $names
n=$#
for r in $(seq "$rounds"); do
  # A rotating order, so that no responder always follows the same one.
  for i in $(seq 0 $((n - 1))); do
    eval "name=\${$(((r + i) % n + 1))}"
    all[$name]+="$(load "${urlOf[$name]}" "${pidOf[$name]}" "$name") "
  done
done
# Both answers must say good for the same certificate.
curl -s --data-binary @"$work/req.der" -H 'Content-Type: application/ocsp-request' "$lab_url" -o "$work/lab.der"
curl -s --data-binary @"$work/req.der" -H 'Content-Type: application/ocsp-request' "http://127.0.0.1:$port/" -o "$work/ossl.der"
for f in lab ossl; do
  openssl ocsp -respin "$work/$f.der" -issuer "$c/lab-intermediate-a/cert.pem" -cert "$c/leaf-ocsp/cert.pem" \
    -CAfile "$c/lab-root/cert.pem" -no_nonce 2>&1 | grep -E "leaf|good|revoked" | head -1 | sed "s/^/$f: /"
done
median() { python3 -c "import statistics,sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.0f}')" $1; }
p=$(median "${all[pinlab]}"); o=$(median "${all[openssl]}")
echo "responses/s, h2load --h1 -c ${CLIENTS:-1} -n $requests, one POST per connection, $rounds interleaved rounds (median; all rounds)"
echo "pinlab serve --revocation-responder  $p  (${all[pinlab]})"
echo "openssl ocsp -index … -port          $o  (${all[openssl]})"
python3 -c "print(f'pinlab / openssl: {$p/$o:.2f}x')"
cpu() { median "$(cat "$work/cpu-$1")"; }
echo "CPU per response (µs, median): pinlab $(cpu pinlab), openssl $(cpu openssl)$([ -n "$baseline" ] && echo ", baseline $(cpu baseline)")"
if [ -n "$baseline" ]; then
  b=$(median "${all[baseline]}")
  echo "baseline pinlab ($baseline)  $b  (${all[baseline]})"
  python3 -c "print(f'baseline / openssl: {$b/$o:.2f}x')"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
