#!/usr/bin/env bash
# Renders the HTML report of `pinlab check` in headless Chromium and saves a screenshot.
#   Benchmarks/check/screenshot.sh [CLIENT] [OUT.png]
# CLIENT is a built-in client (default: pin-presented-chain, so deviations show). Needs chromium
# (apt-get install chromium). The PKI folder defaults to .pinninglab (override with PINLAB_DIR_ARG).
set -euo pipefail
cd "$(dirname "$0")/../.."
client="${1:-pin-presented-chain}"
out="${2:-Benchmarks/check/report.png}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
scratch="${SCRATCH:-.build-catalogue}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
  echo "skipping: no chromium on PATH (apt-get install chromium)" >&2
  exit 0
fi
swift build --scratch-path "$scratch" --product pinlab >/dev/null
bin="$(swift build --scratch-path "$scratch" --show-bin-path)/pinlab"
html="$(mktemp -d)/report.html"
"$bin" check --client "$client" --format html --output "$html" --dir "${PINLAB_DIR_ARG:-.pinninglab}" || true
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2200 \
  --screenshot="$out" "file://$html" 2>/dev/null
echo "wrote $out from $html"
