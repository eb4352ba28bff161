#!/usr/bin/env bash
# Checkpoints and exports (issue 11), as root, against versitygw on
# loopback: export throughput, how long a running guest stays frozen for a
# checkpoint of its 1 GiB volume holding 200 MiB, and the bytes a
# checkpoint writes over the bytes the volume holds. Pass another
# iteration count as $1. Under the network guard, like the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-5}"
scripts/netguard.sh go test -run '^$' -bench 'BenchmarkExportToS3|BenchmarkCheckpointOf1GiBVolumeHolding200MiB' -benchtime "${n}x" ./nibrunner/export ./nibrunner/checkpoint
exec scripts/netguard.sh go test -run '^$' -bench BenchmarkCheckpointFreezeOfARunningGuest -benchtime "${n}x" ./nibrunner/vmm/qemu
