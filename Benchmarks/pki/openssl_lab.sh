#!/usr/bin/env bash
# Build the same tree of P-256 certificates as the lab PKI with the openssl CLI, the way a hand-written script
# does: one key, one CSR and one signature per entity.
# Usage: openssl_lab.sh SHAPE.tsv OUTDIR      (SHAPE.tsv: name<TAB>role<TAB>issuer<TAB>hosts, issuers first)
set -euo pipefail
shape=$1 out=$2
mkdir -p "$out" && cd "$out"
while IFS=$'\t' read -r name role issuer hosts; do
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.key" 2>/dev/null
  san=""
  if [ -n "$hosts" ]; then
    san="subjectAltName="$(echo "$hosts" | tr ',' '\n' | awk '{ if ($0 ~ /^[0-9.]+$/ || $0 ~ /:/) printf "%sIP:%s", sep, $0; else printf "%sDNS:%s", sep, $0; sep="," }')
  fi
  if [ "$role" = root ] || [ "$role" = intermediate ]; then
    ext="basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier=hash"
  else
    ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
subjectKeyIdentifier=hash
${san}"
  fi
  printf '%s\n' "$ext" > "$name.ext"
  if [ "$issuer" = "$name" ]; then
    openssl req -new -x509 -key "$name.key" -subj "/CN=$name" -days 30 -out "$name.pem" \
      -extensions v3 -config <(printf '[req]\ndistinguished_name=dn\n[dn]\n[v3]\n%s\n' "$ext") 2>/dev/null
  else
    openssl req -new -key "$name.key" -subj "/CN=$name" -out "$name.csr" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA "$issuer.pem" -CAkey "$issuer.key" -CAcreateserial -days 30 \
      -extfile "$name.ext" -out "$name.pem" 2>/dev/null
  fi
done < "$shape"
