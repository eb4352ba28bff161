#!/usr/bin/env bash
# Idle guest density (issue 23), as root: 20 idle 256 MiB guests, then an
# idle 128 MiB and an idle 1024 MiB guest side by side, then the microVM
# lifecycle (cold boot, sleep, wake, state size), each run for this tree
# and for BASE_REF (default: the commit before the guests booted a kernel
# of our own, Debian's cloud kernel; BASE_REF=2773f3d is the one before the
# balloon) in alternation within one run. The base tree gets this tree's
# density benchmark file, which needs nothing the base lacks.
# Under the network guard, like the tests; the guests use QEMU's user
# network on loopback. $1 is the lifecycle's iteration count (default 2).
# NIB_DENSITY_GUESTS sets the guest count; NIB_DENSITY_KSM=1 also measures KSM
# sharing (host-wide: it turns ksmd on for the measurement, then back).
set -euo pipefail
cd "$(dirname "$0")/.."
base_ref=${BASE_REF:-$(git log -1 --format=%H --grep='a guest kernel of our own')~1}
work=$(mktemp -d /tmp/nibdensity.XXXXXX)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base_ref"
cp nibrunner/vmm/qemu/density_bench_test.go "$work/base/nibrunner/vmm/qemu/"
go test -c -o "$work/head.test" ./nibrunner/vmm/qemu
(cd "$work/base" && go test -c -o "$work/base.test" ./nibrunner/vmm/qemu)
run() { # tree benchmark benchtime
	echo "== $1 $2"
	(cd nibrunner/vmm/qemu && ../../../scripts/netguard.sh "$work/$1.test" -test.run '^$' -test.bench "^$2\$" -test.benchtime "$3" -test.v)
}
run base BenchmarkDensity 1x
run head BenchmarkDensity 1x
run base BenchmarkIdleSizes 1x
run head BenchmarkIdleSizes 1x
for _ in 1 2; do
	run base BenchmarkGuestLifecycle "${1:-2}x"
	run head BenchmarkGuestLifecycle "${1:-2}x"
done
