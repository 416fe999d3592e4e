#!/usr/bin/env bash
# schemathesis against a running `pinlab serve --control` and the control API's OpenAPI document: every response
# must be a non-5xx with the documented status, media type and schema, and the server must still be running at
# the end. Every request carries the control API's bearer token, read from the serve manifest. Bounded:
# MAX_EXAMPLES examples per operation (default 25), and 10 minutes at most.
# Needs schemathesis (`pip install schemathesis`) and a built pinlab (`swift build --product pinlab`).
set -euo pipefail
cd "$(dirname "$0")/.."
pinlab=${PINLAB:-.build/debug/pinlab}
[ -x "$pinlab" ] || swift build --product pinlab
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$pinlab" serve --control 127.0.0.1:0 --dir "$work/pki" --manifest "$work/manifest.json" >"$work/stdout" 2>"$work/stderr" &
pid=$!
url=
for _ in $(seq 1 1200); do  # up to 120 s: a fresh PKI folder makes its keys first
  url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"]["url"])' "$work/manifest.json" 2>/dev/null) && break
  kill -0 "$pid" 2>/dev/null || { echo "control-api-fuzz: pinlab serve exited early:"; cat "$work/stderr"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "control-api-fuzz: no control URL in the manifest after 120 s"; cat "$work/stderr"; exit 1; }
# The bearer token every route but GET /health requires, from the manifest (mode 0600); never printed here.
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"]["token"])' "$work/manifest.json")
[ -n "$token" ] || { echo "control-api-fuzz: no control token in the manifest"; exit 1; }
echo "control-api-fuzz: schemathesis against ${url}openapi.yaml (with the bearer token)"

status=0
# From the scratch folder: schemathesis writes its own folder (.schemathesis/) where it runs.
(cd "$work" && timeout 600 st run "${url}openapi.yaml" --url "${url%/}" -H "Authorization: Bearer $token" \
  --checks "${CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,unsupported_method}" \
  --max-examples "${MAX_EXAMPLES:-25}" --workers 1 --request-timeout 30 \
  --seed "${SEED:-20261123}" --generation-database none --no-color) || status=$?

if ! kill -0 "$pid" 2>/dev/null; then
  echo "control-api-fuzz: pinlab serve died during the run:"; cat "$work/stderr"; exit 1
fi
exit "$status"
