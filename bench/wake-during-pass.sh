#!/usr/bin/env bash
# How long a wake through the HTTP proxy waits while a pass starts 300 apps
# on the fake VMM with a 2 s start latency (wake-ms, bound 6000), and how
# long the 300 take to run at max_concurrent_vm_starts = 30 (converge-s,
# bound 30). Pass an iteration count as $1 (each one takes ~25 s).
# Under the network guard, like the tests (scripts/netguard.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/netguard.sh go test -run '^$' -bench BenchmarkWakeDuringABusyPass -benchtime "${1:-1}x" ./nibrunner/daemon
