#!/usr/bin/env bash
# Coverage-guided fuzzing of PinningLab's parsers with libFuzzer (+ AddressSanitizer).
#
#   Benchmarks/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s each, every target
#
# Targets: spec scenario template pem pkcs12 keyfile (see Fuzz/PinlabFuzz.swift). Seeds are made fresh from the
# built-in lab PKI spec, the catalogue's scenario files, a generated PKI's PEM and PKCS#12 files and command
# templates; nothing generated is committed. Prints one line per target: executions, crashes, time.
# A crash leaves its input in $OUT/TARGET/crash-* and makes the script exit 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET="${1:-60}"; shift || true
TARGETS=("$@"); [ ${#TARGETS[@]} -gt 0 ] || TARGETS=(spec scenario template pem pkcs12 keyfile)
OUT="${FUZZ_OUT:-$(mktemp -d /tmp/pinlab-fuzz.XXXXXX)}"

swift build --product pinlab-fuzz -c release --scratch-path .build-fuzz \
    -Xswiftc -DPINLAB_FUZZ -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld >"$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; exit 1; }
BIN=.build-fuzz/release/pinlab-fuzz

# Seeds.
swift build --product pinlab >/dev/null
PINLAB=.build/debug/pinlab
"$PINLAB" pki init --dir "$OUT/pki" >/dev/null
mkdir -p "$OUT/seeds"/{spec,scenario,template,pem,pkcs12,keyfile}
cp pki/lab.yaml "$OUT/seeds/spec/"
cp scenarios/*.yaml "$OUT/seeds/scenario/"
printf 'curl\n-sf\n--cacert\n{ca}\n[--pinnedpubkey {pins.curl}]\n{url}\n' >"$OUT/seeds/template/curl"
printf 'python3\nclient.py\n{host}\n{port}\n{pins}\n[--cert {client.cert}]\n' >"$OUT/seeds/template/python"
for n in leaf-v1 lab-root client-valid leaf-rsa-2048; do
    cp "$OUT/pki/certs/$n/cert.pem" "$OUT/seeds/pem/$n.pem"
    cp "$OUT/pki/certs/$n/key.pem" "$OUT/seeds/pem/$n.key"
    cp "$OUT/pki/certs/$n/key.pem" "$OUT/seeds/keyfile/$n.key"
    [ -f "$OUT/pki/certs/$n/identity.p12" ] && cp "$OUT/pki/certs/$n/identity.p12" "$OUT/seeds/pkcs12/$n.p12"
done

status=0
for t in "${TARGETS[@]}"; do
    mkdir -p "$OUT/$t/corpus"
    log="$OUT/$t/fuzz.log"
    set +e
    PINLAB_FUZZ_TARGET="$t" "$BIN" "$OUT/$t/corpus" "$OUT/seeds/$t" -max_total_time="$SECONDS_PER_TARGET" \
        -timeout=5 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix="$OUT/$t/" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    crashes=$( (ls "$OUT/$t"/crash-* "$OUT/$t"/timeout-* "$OUT/$t"/oom-* 2>/dev/null || true) | wc -l)
    echo "fuzz $t: $execs executions in ${SECONDS_PER_TARGET} s, $crashes crashes/timeouts (exit $rc; log $log)"
    [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ] || status=1
done
exit $status
