#!/usr/bin/env bash
# netguard runs a command in a network namespace of its own whose only
# interface is loopback, so that nothing it starts (tests, demos,
# benchmarks) can send a packet off this machine: a dial to any address
# that is not loopback fails at once with "network is unreachable". A test
# that needs more (taps, veth pairs, namespaces, nftables, QEMU) makes it
# inside, as root. Inside, NIB_NET_GUARD=1 (internal/testenv reads it) and
# GOPROXY=off, so a missing module fails by name instead of by timeout:
# everything that downloads runs before, in scripts/setup.sh.
#
# Usage: scripts/netguard.sh COMMAND [ARG...]
#
# Without root, or without unshare(1), it says so and runs COMMAND
# unguarded (a developer's machine), except with NIB_INTEGRATION=1 (CI),
# where the guard is required.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }

# Already inside: the variable says so and there is no route off the machine.
if [ "${NIB_NET_GUARD:-}" = 1 ] && [ -z "$(PATH=$PATH:/usr/sbin:/sbin ip route show default 2>/dev/null; PATH=$PATH:/usr/sbin:/sbin ip -6 route show default 2>/dev/null)" ]; then
  exec "$@"
fi

why=""
if [ "$(id -u)" != 0 ]; then
  why="not root"
elif ! command -v unshare >/dev/null 2>&1; then
  why="no unshare (util-linux)"
elif ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
  why="no ip (iproute2)"
elif ! out=$(unshare --net true 2>&1); then
  why="unshare --net failed: $out"
fi
if [ -n "$why" ]; then
  if [ "${NIB_INTEGRATION:-}" = 1 ]; then
    echo "netguard: NIB_INTEGRATION=1 needs the network guard, and it cannot be made here: $why" >&2
    exit 1
  fi
  unset NIB_NET_GUARD
  printf '\033[33mnetguard: %s, so this runs WITHOUT the network guard: nothing stops a test from sending packets off this machine\033[0m\n' "$why" >&2
  exec "$@"
fi

# A new network namespace starts with lo down; bring it up, then run.
exec unshare --net -- bash -c '
  PATH=$PATH:/usr/sbin:/sbin
  ip link set lo up || { echo "netguard: cannot bring lo up in the new namespace" >&2; exit 1; }
  export NIB_NET_GUARD=1 GOPROXY=off
  printf "\033[2mnetguard: %s runs in a network namespace with only loopback\033[0m\n" "$*" >&2
  exec "$@"' netguard "$@"
