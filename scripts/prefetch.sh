#!/usr/bin/env bash
# Downloads, before the network guard goes up (scripts/netguard.sh), what
# the tests and the demo would otherwise fetch while they run: the Go
# modules of the build and test graph, and the kernel source package that
# nibrunner/guestimage builds the guest kernel from (into
# $NIBRUNNER_KERNEL_DEBS, default /var/cache/nibrunner/debs, where guestimage
# looks before apt-get download). Then it builds that kernel once, into
# $NIBRUNNER_KERNEL_PREBUILT (default /var/cache/nibrunner/kernel), where
# every guest image build finds it: no test builds a kernel under its own
# time limit. Idempotent: a second run downloads and builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

go mod download

# The package guestimage.SourcePackage names.
pkg=linux-source-6.1
debs=${NIBRUNNER_KERNEL_DEBS:-/var/cache/nibrunner/debs}
if [ "$(id -u)" != 0 ]; then
  echo "prefetch: not root, so the guest kernel is not fetched and built ahead (the QEMU tests and the microVM demo need root anyway)" >&2
elif ! command -v apt-get >/dev/null 2>&1; then
  echo "prefetch: no apt-get, so the guest kernel is not fetched and built ahead" >&2
else
  # The candidate version, as guestimage.fetchDeb looks for it: an update
  # of the package is fetched (and the kernel rebuilt) at the next setup.
  ver=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)
  ver=${ver//:/%3a}
  if ! compgen -G "$debs/${pkg}_${ver:-*}_*.deb" >/dev/null; then
    echo "prefetch: downloading $pkg ${ver:-} into $debs (the guest kernel's source)" >&2
    mkdir -p "$debs"
    (cd "$debs" && apt-get download -q "$pkg" 2>&1 | grep -v 'unsandboxed as root' >&2 || true)
    compgen -G "$debs/${pkg}_${ver:-*}_*.deb" >/dev/null || { echo "prefetch: apt-get download $pkg left no .deb in $debs (run apt-get update); the guest image will not build offline" >&2; exit 1; }
  fi
  start=$SECONDS
  go run ./nibrunner/guestimage/cmd/guestkernel
  echo "prefetch: the guest kernel is ready ($((SECONDS - start)) s; a first build takes minutes)" >&2
fi
