#!/usr/bin/env bash
# One device of a farm that runs any PinningLab batch harness (Examples/Batch: Python's ssl, OkHttp) on the cells it
# leases: the lease's cell becomes a batch document of one cell on the harness's standard input, and the harness's
# answer line (claim, category, detail, milliseconds) is the device's answer. Goes on until the queue is finished.
# Used by Tests/PinlabCLITests/DeviceQueueTests.swift.
#
# Usage: harness_device.sh NAME OS CLIENT API_FILE -- HARNESS COMMAND…
#   API_FILE  a shell file setting URL, TOKEN and QUEUE, read before every request (as curl_device.sh).
set -u
name=$1 os=$2 client=$3 api_file=$4
shift 5
post() {
  # shellcheck disable=SC1090
  . "$api_file"
  curl -s --max-time 20 -w '\n%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$2" "${URL}$1" 2>/dev/null || printf '\n000'
}
while true; do
  . "$api_file"
  reply=$(post leases "$(jq -cn --arg c "$client" --arg d "$name" --arg o "$os" --arg q "$QUEUE" \
    '{client: $c, device: $d, os: $o, queue: $q}')")
  code=${reply##*$'\n'} body=${reply%$'\n'*}
  if [ "$code" = 200 ] && [ "$(jq -r .finished <<<"$body")" = true ]; then exit 0; fi
  if [ "$code" != 201 ]; then sleep 0.2; continue; fi
  lease=$(jq -r .lease <<<"$body")
  # A heartbeat while the harness works, as curl_device.sh keeps its lease (a JVM started per cell on a loaded
  # machine can outlast a short lease): renew every second until the answer is sent.
  ( while sleep 1; do post "leases/$lease/renew" '{}' >/dev/null; done ) &
  beat=$!
  answer=$(jq -c '{format: "pinlab-batch", formatVersion: 1, cellTimeoutSeconds: 10, cells: [.cell]}' <<<"$body" \
    | "$@" | head -n 1)
  # The harness's answer line, without the cell id (the lease names the cell); no line: the harness failed.
  if ! payload=$(jq -ec '{claim, category, detail: ((.detail // "")[0:4000]), milliseconds} | with_entries(select(.value != null and .value != ""))' <<<"$answer" 2>/dev/null); then
    payload='{"claim":"refused","detail":"the harness gave no answer line"}'
  fi
  reply=$(post "leases/$lease/answer" "$payload")
  kill "$beat" 2>/dev/null; wait "$beat" 2>/dev/null
  printf '%s %s %s\n' "$lease" "$(jq -r .cell.id <<<"$body")" "${reply##*$'\n'}"
done
