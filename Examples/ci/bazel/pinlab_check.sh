#!/usr/bin/env bash
# Bazel sh_test wrapper for `pinlab check` (BUILD.bazel beside it): one piece of a sharded run. pinlab itself reads
# TEST_SHARD_INDEX/TEST_TOTAL_SHARDS and touches TEST_SHARD_STATUS_FILE; this script only puts the PKI in the test's
# scratch folder, the JSON report in its undeclared outputs and the JUnit where Bazel reads it.
#
#   pinlab_check.sh CHECK-ARGUMENTS…     (e.g. --client correct, or --profiles … -- curl … {url})
#
# Exit status: pinlab check's (0 conforms, 1 a cell deviates, 2 a usage or setup error).
set -uo pipefail
pinlab="${PINLAB_BIN:-pinlab}"
out="${TEST_UNDECLARED_OUTPUTS_DIR:-${TEST_TMPDIR:-/tmp}}"
mkdir -p "$out"
"$pinlab" check --dir "${TEST_TMPDIR:-/tmp}/pinlab-pki" --format json --output "$out/check.json" "$@"
status=$?
if [ -s "$out/check.json" ] && [ -n "${XML_OUTPUT_FILE:-}" ]; then
  "$pinlab" report merge --partial "$out/check.json" --format junit --output "$XML_OUTPUT_FILE" > /dev/null || true
fi
exit "$status"
