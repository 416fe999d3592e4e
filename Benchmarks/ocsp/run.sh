#!/usr/bin/env bash
# The lab OCSP responder against OpenSSL's, on the same requests, side by side: `pinlab serve
# --revocation-responder` and `openssl ocsp -index … -port`, each asked for leaf-ocsp (good) by one request made
# once with `openssl ocsp -reqout`; the load is a sequential Python http.client loop, one POST per connection,
# for SECONDS, alternating ROUNDS times. `openssl ocsp -port` takes no address and binds every interface, so the
# whole run happens in a network namespace of its own with only `lo` (unshare -rn): nothing listens outside.
# Usage: Benchmarks/ocsp/run.sh PINLAB [ROUNDS] [SECONDS]
set -euo pipefail
[ -n "${PINLAB_OCSP_BENCH_DEBUG:-}" ] && set -x
if [ "${PINLAB_OCSP_BENCH_INNER:-}" != 1 ]; then
  exec env PINLAB_OCSP_BENCH_INNER=1 unshare -rn bash "$0" "$@"
fi
ip link set lo up 2>/dev/null || true
pinlab="$(realpath "$1")"; rounds="${2:-3}"; seconds="${3:-5}"
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$pinlab" pki init --dir "$work/pki" >/dev/null
c="$work/pki/certs"
openssl ocsp -no_nonce -issuer "$c/lab-intermediate-a/cert.pem" -cert "$c/leaf-ocsp/cert.pem" -reqout "$work/req.der" >/dev/null
"$pinlab" serve --dir "$work/pki" --identity leaf-ocsp --engine openssl --revocation-responder >"$work/serve.log" 2>&1 &
for _ in $(seq 100); do grep -q "^revocation: http" "$work/serve.log" && break; sleep 0.1; done
lab_url="$(sed -n 's/^revocation: \(http:\/\/[0-9.:]*\).*/\1/p' "$work/serve.log")/lab-intermediate-a"
# OpenSSL's responder: an index with leaf-ocsp as valid, signed by the intermediate itself.
serial=$(openssl x509 -in "$c/leaf-ocsp/cert.pem" -noout -serial | cut -d= -f2)
subject=$(openssl x509 -in "$c/leaf-ocsp/cert.pem" -noout -subject -nameopt compat | sed 's/^subject=//')
printf 'V\t351231235959Z\t\t%s\tunknown\t%s\n' "$serial" "$subject" > "$work/index.txt"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
openssl ocsp -index "$work/index.txt" -port "$port" -rsigner "$c/lab-intermediate-a/cert.pem" \
  -rkey "$c/lab-intermediate-a/key.pem" -CA "$c/lab-intermediate-a/cert.pem" -nmin 5 >"$work/ocsp.log" 2>&1 &
# Wait for its listening socket without connecting (a probe connection that sends no request ends it).
listening() { ss -ltn 2>/dev/null | grep -q "127.0.0.1:$port \|\*:$port \|0.0.0.0:$port "; }
for _ in $(seq 50); do listening && break; sleep 0.1; done
listening || { echo "openssl ocsp did not start:"; cat "$work/ocsp.log"; exit 1; }
load() {
  python3 - "$1" "$work/req.der" "$seconds" <<'PY'
import http.client, sys, time, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1]); body = open(sys.argv[2], "rb").read(); end = time.monotonic() + float(sys.argv[3])
n = 0; good = 0
while time.monotonic() < end:
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    c.request("POST", url.path or "/", body, {"Content-Type": "application/ocsp-request"})
    r = c.getresponse(); data = r.read(); c.close()
    n += 1; good += r.status == 200 and len(data) > 100
print(f"{n / float(sys.argv[3]):.0f} {good}/{n}")
PY
}
declare -A all
for _ in $(seq "$rounds"); do
  all[pinlab]+="$(load "$lab_url" | cut -d' ' -f1) "
  all[openssl]+="$(load "http://127.0.0.1:$port/" | cut -d' ' -f1) "
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
echo "responses/s, one POST per connection, $rounds rounds of ${seconds}s alternating (median; all rounds)"
echo "pinlab serve --revocation-responder  $p  (${all[pinlab]})"
echo "openssl ocsp -index … -port          $o  (${all[openssl]})"
python3 -c "print(f'pinlab / openssl: {$p/$o:.2f}x')"
