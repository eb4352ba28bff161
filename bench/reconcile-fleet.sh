#!/usr/bin/env bash
# alp reconcile at fleet scale (issue 15): a generated fleet of 40 subnets,
# 1,500 nodes, 300 operators and 120 providers, all in sync, served by the
# devnet at 50 ms latency per request (the code of `alp devnet --fleet F
# --latency 50ms`, run by bench/reconcilefleet so it can count the requests
# each endpoint serves and change records). Times `alp reconcile` with
# /usr/bin/time -v: cold cache; warm cache, no changes; warm cache after 20
# changed records; and alp as it was before the certified copy (OLD_REV, by
# default the commit before it) on the same fleet. Under the network guard.
#   bench/reconcile-fleet.sh [LATENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NIB_NET_GUARD:-}" ]; then exec scripts/netguard.sh "$0" "$@"; fi
latency=${1:-50ms}
old_rev=${OLD_REV:-$(git log --format=%H --grep='^ic/nns: a get_certified_changes_since reply whose delta subtree' -1)^}
work=$(mktemp -d)
trap 'kill "${serve_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; git worktree remove --force "$work/old-src" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/alp" ./cmd/alp
go build -o "$work/reconcilefleet" ./bench/reconcilefleet
git worktree add --detach -q "$work/old-src" "$old_rev"
(cd "$work/old-src" && go build -o "$work/alp-old" ./cmd/alp)
"$work/reconcilefleet" gen "$work/fleet"
"$work/reconcilefleet" serve -fleet "$work/fleet/fleet.json" -dir "$work/devnet" -latency "$latency" \
	-env "$work/devnet.env" -admin "$work/admin" &
serve_pid=$!
for _ in $(seq 600); do [ -s "$work/admin" ] && break; sleep 0.1; done
[ -s "$work/admin" ] || { echo "the devnet did not start" >&2; exit 1; }
admin=$(cat "$work/admin")
# shellcheck disable=SC1091
. "$work/devnet.env"

run() { # name binary cache
	local name=$1 bin=$2 cache=$3
	curl -s "$admin/counts" >/dev/null # reset
	XDG_CACHE_HOME=$cache /usr/bin/time -v "$bin" reconcile --config "$work/fleet/proposals.hcl" \
		--state "$work/state.json" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
	local wall rss counts deltas verdict
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/$name.err")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/$name.err")
	counts=$(curl -s "$admin/counts")
	deltas=$(grep -o 'certified registry copy at version [0-9]* ([0-9]* delta(s) fetched in [0-9]* request(s)' "$work/$name.err" | sed 's/certified registry copy at version/copy at/') || deltas="no certified copy"
	verdict=$(grep '^reconcile: ' "$work/$name.out" || echo "no verdict")
	printf '%-24s wall %-8s maxrss %6s kB  exit %s  requests: %s  %s  %s\n' \
		"$name" "$wall" "$rss" "${rc:-0}" "$counts" "$deltas" "$verdict"
	rc=
}

echo "fleet: 40 subnets, 1500 nodes, 300 operators, 120 providers; latency $latency; $(nproc) cores"
run "new, cold cache" "$work/alp" "$work/cache"
run "new, warm, no changes" "$work/alp" "$work/cache"
curl -s -X POST "$admin/change?n=20" >/dev/null
run "new, warm, 20 changed" "$work/alp" "$work/cache"
run "before ($(git rev-parse --short "$old_rev"))" "$work/alp-old" "$work/cache-old"
