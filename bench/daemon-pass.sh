#!/usr/bin/env bash
# CPU time and RSS of one no-op converge pass over 1,000 instances on the
# fake VMM (nibrunner/daemon). Pass another iteration count as $1.
# Under the network guard, like the tests (scripts/netguard.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/netguard.sh go test -run '^$' -bench BenchmarkANoOpPassOver1000Instances -benchtime "${1:-50}x" ./nibrunner/daemon
