#!/bin/sh
# curl that applies its pins only within their declared scope, as an app's pin configuration does: --pinnedpubkey
# for the host the pins are declared for (and its subdomains when they include them), plain curl elsewhere. curl
# itself pins every URL it is handed pins for, so a template that always passes {pins.curl} fails the cells whose
# pins are declared for another host. Host names compare in their normal form (lower case, no trailing dot).
#
#   pinlab check --platform openssl-default --profiles none,leaf-spki,leaf-spki+backup -- \
#     Examples/Commands/curl-in-scope.sh {host} {pins.domain} {pins.subdomains} '{pins.curl}' -- \
#     -sf -o /dev/null --resolve {resolve} --cacert {ca} '[--cert {client.cert}]' '[--key {client.key}]' {url}
#
# Usage: curl-in-scope.sh HOST PINS_DOMAIN PINS_SUBDOMAINS PINS_CURL -- CURL-ARGUMENTS...
host=$(printf %s "$1" | tr 'A-Z' 'a-z'); host=${host%.}; domain=$(printf %s "$2" | tr 'A-Z' 'a-z'); sub=$3; pins=$4
shift 5
inscope=no
[ "$host" = "$domain" ] && inscope=yes
case "$host" in *."$domain") [ "$sub" = true ] && inscope=yes;; esac
if [ -n "$pins" ] && [ "$inscope" = yes ]; then exec curl --pinnedpubkey "$pins" "$@"; fi
exec curl "$@"
