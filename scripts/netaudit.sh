#!/usr/bin/env bash
# netaudit runs a command like scripts/netguard.sh does, in a network
# namespace of its own, but one that seems to have a way out: a default
# route (v4 and v6) over a veth pair that leads nowhere. nftables records
# every TCP/UDP destination that is not loopback and rejects the packet,
# so nothing leaves, and afterwards the recorded destinations are listed.
# The guard alone only makes such a dial fail at once, and a test that
# tolerates the failure passes without anyone noticing; this finds it.
#
# Usage (as root): scripts/netaudit.sh go test -count=1 ./...
# Exit status: the command's, or 3 when it passed but something tried to
# reach an address off the machine.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "netaudit: needs root (a network namespace and nftables)" >&2; exit 1; }

exec unshare --net -- bash -c '
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
ip link set lo up
ip link add out0 type veth peer name out1
ip link set out1 up
ip link set out0 up
ip addr add 198.18.0.2/24 dev out0
ip -6 addr add fd00:a0d1:7::2/64 dev out0 nodad
ip route add default dev out0
ip -6 route add default dev out0
nft -f - <<NFT
table inet netaudit {
  set v4 { type ipv4_addr . inet_proto . inet_service; flags dynamic; }
  set v6 { type ipv6_addr . inet_proto . inet_service; flags dynamic; }
  chain out {
    type filter hook output priority 0;
    oifname "lo" accept
    meta l4proto { tcp, udp } ip daddr != 127.0.0.0/8 add @v4 { ip daddr . meta l4proto . th dport } reject
    meta l4proto { tcp, udp } ip6 daddr != ::1 add @v6 { ip6 daddr . meta l4proto . th dport } reject
  }
}
NFT
rc=0
"$@" || rc=$?
seen=$( { nft -j list set inet netaudit v4; nft -j list set inet netaudit v6; } |
  grep -o "\"concat\": \[[^]]*\]" | sed -E "s/\"concat\": \[//; s/\]//; s/\"//g; s/, / /g" || true)
if [ -n "$seen" ]; then
  echo "netaudit: tried to reach off the machine (address protocol port):" >&2
  printf "%s\n" "$seen" | sort -u | sed "s/^/  /" >&2
  [ $rc = 0 ] && rc=3
else
  echo "netaudit: nothing tried to reach an address off the machine" >&2
fi
exit $rc
' netaudit "$@"
