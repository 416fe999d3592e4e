#!/usr/bin/env bash
# HTTP/2 fixture server against nginx's http2 module, with the same load generator (h2load), side by side.
# Usage: Benchmarks/h2/run.sh PINLAB ROUNDS [REQUESTS]
#   PINLAB: the pinlab binary (e.g. .build/release/pinlab); ROUNDS: alternating rounds; REQUESTS: per h2load run.
# Needs nginx (apt-get install nginx-light) and h2load (apt-get install nghttp2-client). Everything listens on
# 127.0.0.1 only; nginx runs in the foreground from a scratch folder and is stopped at the end.
set -euo pipefail
pinlab="$1"; rounds="${2:-3}"; requests="${3:-5000}"
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$pinlab" pki init --dir "$work/pki" >/dev/null
"$pinlab" serve --dir "$work/pki" --identity leaf-v1 --http2 --engine both --manifest "$work/m.json" >"$work/serve.log" 2>&1 &
for _ in $(seq 100); do [ -s "$work/m.json" ] && break; sleep 0.1; done
port() { python3 -c "import json,sys; print([s['port'] for s in json.load(open(sys.argv[1]))['servers'] if s['engine']==sys.argv[2]][0])" "$work/m.json" "$1"; }
ossl=$(port openssl); gtls=$(port gnutls)
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
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
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$nport) 2>/dev/null && break; sleep 0.1; done
rate() { h2load -n "$requests" -c 10 -m 10 "https://127.0.0.1:$1/" 2>/dev/null | awk '/^finished in/ {gsub(",", ""); print $4} /^requests:/ {print "ok=" $8 > "/dev/stderr"}'; }
declare -A all
for r in $(seq "$rounds"); do
  for name in pinlab-openssl pinlab-gnutls nginx; do
    case $name in pinlab-openssl) p=$ossl;; pinlab-gnutls) p=$gtls;; nginx) p=$nport;; esac
    all[$name]+="$(rate "$p" 2>>"$work/ok.log") "
  done
done
median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.0f}')" $1; }
n=$(median "${all[nginx]}")
echo "h2load -n $requests -c 10 -m 10, $rounds rounds alternating; requests/s (median), ratio to nginx"
for name in pinlab-openssl pinlab-gnutls nginx; do
  m=$(median "${all[$name]}")
  echo "$name  $m req/s  (${all[$name]})  $(python3 -c "print(f'{$m/$n:.2f}x nginx')")"
done
# The same fixture server over HTTP/1.1 (its h1 path answers one request per connection: a handshakes/s figure).
h1=$(h2load --h1 -n $((requests / 10)) -c 10 "https://127.0.0.1:$ossl/" 2>/dev/null | awk '/^finished in/ {gsub(",", ""); print $4}')
echo "pinlab-openssl over http/1.1 (h2load --h1 -n $((requests / 10)) -c 10): $h1 req/s"
echo "succeeded per run: $(sort "$work/ok.log" | uniq -c | tr '\n' ' ')"
