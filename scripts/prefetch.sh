#!/usr/bin/env bash
# Downloads, before the network guard goes up (scripts/netguard.sh), what
# the tests and the demo would otherwise fetch while they run: the Go
# modules of the build and test graph, and the guest kernel package that
# nibrunner/guestimage unpacks (into $NIBRUNNER_KERNEL_DEBS, default
# /var/cache/nibrunner/debs, where guestimage looks before apt-get
# download). Idempotent: a second run downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

go mod download

# The same package guestimage.resolveKernelPackage picks: the versioned
# kernel linux-image-cloud-amd64 depends on today.
debs=${NIBRUNNER_KERNEL_DEBS:-/var/cache/nibrunner/debs}
if [ "$(id -u)" != 0 ]; then
  echo "prefetch: not root, so the guest kernel is not fetched ahead (the QEMU tests and the microVM demo need root anyway)" >&2
elif ! command -v apt-get >/dev/null 2>&1; then
  echo "prefetch: no apt-get, so the guest kernel is not fetched ahead" >&2
else
  pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
    sed -nE 's/^ *Depends: <?(linux-image-[0-9][^ >]*-cloud-amd64(-unsigned)?)>?$/\1/p' | head -n1)
  if [ -z "$pkg" ]; then
    echo "prefetch: apt-cache knows no versioned package behind linux-image-cloud-amd64 (run apt-get update); the guest image will not build offline" >&2
  elif compgen -G "$debs/${pkg}_*.deb" >/dev/null; then
    :
  else
    echo "prefetch: downloading $pkg into $debs (the guest kernel)" >&2
    mkdir -p "$debs"
    (cd "$debs" && apt-get download -q "$pkg" 2>&1 | grep -v 'unsandboxed as root' >&2 || true)
    compgen -G "$debs/${pkg}_*.deb" >/dev/null || { echo "prefetch: apt-get download $pkg left no .deb in $debs" >&2; exit 1; }
  fi
fi
