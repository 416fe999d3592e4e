#!/usr/bin/env bash
# A batch harness that dies holding its lease, for harness_device.sh: it runs the real harness on the leased cell (so
# the lease's server sees the client connect), keeps the batch document as MARKER, and never answers — it hangs until
# the test kills its device's process group. Used by Tests/PinlabCLITests/MixedFarmTests.swift.
#
# Usage: harness_device.sh NAME OS CLIENT API_FILE -- dying_harness.sh MARKER HARNESS COMMAND…
set -u
marker=$1
shift
tee "$marker.tmp" | "$@" >/dev/null
mv "$marker.tmp" "$marker"
exec sleep 3600
