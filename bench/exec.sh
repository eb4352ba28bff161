#!/usr/bin/env bash
# nibrunnerd exec of a trivial program into one running microVM (QEMU,
# our guest image, TCG where there is no KVM) beside nibrunnerd ps over the
# same control socket, alternating, as root; p50 and p99 of each. Pass the
# number of pairs as $1 (default 200). Under the network guard, like the
# tests (scripts/netguard.sh); the guest uses QEMU's user network.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/netguard.sh go test -run '^$' -bench BenchmarkExecBesidePs -benchtime "${1:-200}x" ./cmd/nibrunnerd
