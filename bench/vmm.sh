#!/usr/bin/env bash
# Cold boot, sleep, wake and idle memory of one real microVM (QEMU microvm,
# our guest image), as root. Every iteration boots a guest, so the count is
# small; pass another count as $1.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench BenchmarkGuestLifecycle -benchtime "${1:-3}x" ./nibrunner/vmm/qemu
