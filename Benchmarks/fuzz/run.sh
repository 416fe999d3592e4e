#!/usr/bin/env bash
# Coverage-guided fuzzing of PinningLab's parsers with libFuzzer (+ AddressSanitizer).
#
#   Benchmarks/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s each, every target
#   FUZZ_RUNS=1000000 Benchmarks/fuzz/run.sh 0 server-openssl   a fixed number of executions instead of a time
#   FUZZ_SANITIZERS=fuzzer Benchmarks/fuzz/run.sh ...           libFuzzer without AddressSanitizer (.build-fuzz-nosan):
#                                                               several times the executions a second; Swift's own
#                                                               bounds and overflow checks still trap
#
# Targets: spec scenario template pem pkcs12 keyfile server-openssl server-gnutls request-head connect-head
# ocsp-request audit-xml (see Fuzz/PinlabFuzz.swift, Fuzz/ServerPathFuzz.swift and Fuzz/HeadFuzz.swift). Seeds are made fresh from the built-in lab PKI spec, the catalogue's scenario files, a
# generated PKI's PEM and PKCS#12 files and command templates; the server targets' seeds are real clients' bytes
# (openssl s_client, gnutls-cli, curl; TLS 1.2/1.3, SNI or not, ALPN, client certificates) captured by
# capture_seeds.py against `pinlab serve`. Nothing generated is committed. Prints one line per target: executions,
# crashes, time, and for the server targets how many good clients were served between batches.
# A crash leaves its input in $OUT/TARGET/crash-* and makes the script exit 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET="${1:-60}"; shift || true
TARGETS=("$@"); [ ${#TARGETS[@]} -gt 0 ] || TARGETS=(spec scenario template pem pkcs12 keyfile server-openssl server-gnutls request-head connect-head ocsp-request audit-xml)
OUT="${FUZZ_OUT:-$(mktemp -d /tmp/pinlab-fuzz.XXXXXX)}"
mkdir -p "$OUT"

SANITIZERS="${FUZZ_SANITIZERS:-fuzzer,address}"
case "$SANITIZERS" in
    fuzzer,address) SCRATCH=.build-fuzz ;;
    fuzzer) SCRATCH=.build-fuzz-nosan ;;
    *) echo "run.sh: FUZZ_SANITIZERS is fuzzer,address (the default) or fuzzer, not '$SANITIZERS'" >&2; exit 2 ;;
esac
echo "fuzz: building pinlab-fuzz with -sanitize=$SANITIZERS in $SCRATCH (log $OUT/build.log)"
swift build --product pinlab-fuzz -c release --scratch-path "$SCRATCH" \
    -Xswiftc -DPINLAB_FUZZ -Xswiftc -sanitize="$SANITIZERS" -Xswiftc -use-ld=lld >"$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; exit 1; }
BIN="$SCRATCH/release/pinlab-fuzz"

# Seeds.
swift build --product pinlab >/dev/null
PINLAB=.build/debug/pinlab
"$PINLAB" pki init --dir "$OUT/pki" >/dev/null
mkdir -p "$OUT/seeds"/{spec,scenario,template,pem,pkcs12,keyfile,request-head,connect-head,ocsp-request,audit-xml}
case " ${TARGETS[*]} " in *" server-"*)
    python3 Benchmarks/fuzz/capture_seeds.py "$PINLAB" "$OUT/pki" "$OUT/seeds/server" >"$OUT/capture.log" 2>&1 \
        || { cat "$OUT/capture.log"; exit 1; }
    ln -sfn server "$OUT/seeds/server-openssl"; ln -sfn server "$OUT/seeds/server-gnutls" ;;
esac
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
# Request heads (the first byte also picks the size of the reads the input is split into), CONNECT requests, OCSP
# requests made by `openssl ocsp` for lab certificates, and the XML configurations `pinlab export` writes.
printf 'GET /servers?wait=5&x=%%41 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 2\r\n\r\n{}' >"$OUT/seeds/request-head/get"
printf '\x01GET / HTTP/1.1\nHost: localhost\nUser-Agent: nc\n\n' >"$OUT/seeds/request-head/bare-lf"
printf 'POST /x HTTP/1.0\r\nA: b\r\n c\r\n\r\n' >"$OUT/seeds/request-head/folded"
printf 'CONNECT api.pinning.test:443 HTTP/1.1\r\nHost: api.pinning.test:443\r\nProxy-Connection: keep-alive\r\n\r\n' >"$OUT/seeds/connect-head/api"
printf 'CONNECT [::1]:8443 HTTP/1.1\r\n\r\n' >"$OUT/seeds/connect-head/ipv6"
printf 'GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\n\r\n' >"$OUT/seeds/connect-head/get"
printf 'CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n\x16\x03\x01' >"$OUT/seeds/connect-head/early-bytes"
for n in leaf-v1 leaf-cdn leaf-expired; do
    openssl ocsp -no_nonce -issuer "$OUT/pki/certs/lab-intermediate-a/cert.pem" -cert "$OUT/pki/certs/$n/cert.pem" \
        -reqout "$OUT/seeds/ocsp-request/$n.der" >/dev/null 2>&1 || true
done
openssl ocsp -sha256 -issuer "$OUT/pki/certs/lab-intermediate-a/cert.pem" -cert "$OUT/pki/certs/leaf-v1/cert.pem" \
    -cert "$OUT/pki/certs/leaf-v2-renewal/cert.pem" -reqout "$OUT/seeds/ocsp-request/sha256-nonce-two.der" >/dev/null 2>&1 || true
for f in nsc trustkit-plist nspinneddomains mobileconfig; do
    "$PINLAB" export "$f" --dir "$OUT/pki" --scenario baseline --profile leaf-spki+backup --out "$OUT/seeds/audit-xml/$f.xml" >/dev/null
done

# One known leak in a dependency (swift-crypto's RSA key generation, once per key) is suppressed: see lsan.supp.
export LSAN_OPTIONS="suppressions=$PWD/Benchmarks/fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

status=0
for t in "${TARGETS[@]}"; do
    mkdir -p "$OUT/$t/corpus"
    log="$OUT/$t/fuzz.log"
    set +e
    if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="$SECONDS_PER_TARGET"); fi
    # The time bound per input is 5 s, except for the server targets' first input, which also builds their lab PKI
    # (RSA keys, under ASan, on a loaded machine: 6 s seen), so they get 30 s.
    max_len=65536; timeout=5; case "$t" in server-*) max_len=20000; timeout=30 ;; esac
    # -detect_leaks=0: libFuzzer runs a whole-heap leak check after every input that allocates more than it frees,
    # which the server path always does (its bounded observation store); that cut the server targets from 167 to 12
    # executions a second. Leaks are the soak check's business (RSS flat over 100,000 handshakes).
    PINLAB_FUZZ_TARGET="$t" "$BIN" "$OUT/$t/corpus" "$OUT/seeds/$t" "${limit[@]}" -detect_leaks=0 \
        -timeout=$timeout -rss_limit_mb=4096 -max_len=$max_len -print_final_stats=1 -artifact_prefix="$OUT/$t/" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    crashes=$( (ls "$OUT/$t"/crash-* "$OUT/$t"/timeout-* "$OUT/$t"/oom-* 2>/dev/null || true) | wc -l)
    secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o '[0-9]* second' | grep -o '[0-9]*' || echo "$SECONDS_PER_TARGET")
    good=""
    case "$t" in server-*)
        good=", good clients served between batches: $(grep -c 'good client #' "$log" || true)" ;;
    esac
    echo "fuzz $t: $execs executions in ${secs} s, $crashes crashes/timeouts$good (exit $rc; log $log)"
    [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ] || status=1
done
exit $status
