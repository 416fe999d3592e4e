#!/usr/bin/env bash
# One device of a farm, as a shell and curl: asks the control API's queue for the next cell of the client "curl"
# (POST /leases), connects to the lease's server as `pinlab check -- curl -sf -o /dev/null --cacert {ca}
# [--pinnedpubkey {pins.curl}] {url}` would (exit 0: accepted, else refused), answers (POST /leases/ID/answer), and
# goes on until the queue is finished. Used by Tests/PinlabCLITests/DeviceQueueTests.swift.
#
# Usage: curl_device.sh NAME OS API_FILE MODE [MARKER]
#   API_FILE  a shell file setting URL (http://127.0.0.1:PORT/), TOKEN and QUEUE; read before every request, so a
#             restarted control API (a new port and token) is followed.
#   MODE      normal, or die: after its first lease it writes the lease's JSON to MARKER and hangs there (exec
#             sleep), to be killed mid-lease.
# Environment: PACE (seconds between cells, default 0: a device's own pace).
set -u
name=$1 os=$2 api_file=$3 mode=$4 marker=${5:-}
pace=${PACE:-0}

# POST $1 with the JSON $2; prints the body, then the status on a line of its own (000: no answer).
post() {
  # shellcheck disable=SC1090
  . "$api_file"
  curl -s --max-time 20 -w '\n%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$2" "${URL}$1" 2>/dev/null || printf '\n000'
}

while true; do
  . "$api_file"
  reply=$(post leases "{\"client\":\"curl\",\"device\":\"$name\",\"os\":\"$os\",\"queue\":\"$QUEUE\"}")
  code=${reply##*$'\n'} body=${reply%$'\n'*}
  if [ "$code" = 200 ]; then
    [ "$(jq -r .finished <<<"$body")" = true ] && exit 0
  fi
  if [ "$code" != 201 ]; then
    # Nothing to hand out yet (cells on lease elsewhere), or the API is restarting: ask again.
    sleep 0.2
    continue
  fi
  lease=$(jq -r .lease <<<"$body")
  if [ "$mode" = die ]; then
    printf '%s\n' "$body" >"$marker.tmp" && mv "$marker.tmp" "$marker"
    exec sleep 3600
  fi
  # A heartbeat while the cell is worked on, as an app on a phone keeps its lease: renew every second (a loaded CI
  # machine can take longer than a lease between the lease and the answer; without renewals the cell was handed out
  # again and answered twice).
  ( while sleep 1; do post "leases/$lease/renew" '{}' >/dev/null; done ) &
  beat=$!
  ca=$(jq -r .cell.trustFile <<<"$body")
  pins=$(jq -r .cell.pins.curl <<<"$body")
  url=$(jq -r .cell.url <<<"$body")
  args=(-sf -o /dev/null --max-time 10 --cacert "$ca")
  [ -n "$pins" ] && args+=(--pinnedpubkey "$pins")
  start=$(date +%s%N)
  if curl "${args[@]}" "$url" 2>/dev/null; then claim=accepted; else claim="refused"; fi
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  # The answer: retried while the API does not answer (restarting); a restarted API knows no lease of the one
  # before it (404), and the cell goes back to its queue.
  for _ in $(seq 1 100); do
    reply=$(post "leases/$lease/answer" "{\"claim\":\"$claim\",\"milliseconds\":$ms}")
    code=${reply##*$'\n'}
    [ "$code" != 000 ] && break
    sleep 0.2
  done
  kill "$beat" 2>/dev/null; wait "$beat" 2>/dev/null
  printf '%s %s %s %s\n' "$lease" "$(jq -r .cell.id <<<"$body")" "$claim" "$code"
  sleep "$pace"
done
