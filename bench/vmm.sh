#!/usr/bin/env bash
# Cold boot, sleep, wake and idle memory of one real microVM (QEMU microvm,
# our guest image), as root. Every iteration boots a guest, so the count is
# small; pass another count as $1. Under the network guard, like the tests
# (scripts/netguard.sh); the guests use QEMU's user network on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/netguard.sh go test -run '^$' -bench BenchmarkGuestLifecycle -benchtime "${1:-3}x" ./nibrunner/vmm/qemu
