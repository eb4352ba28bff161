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
# With DEAD=N, N of the nodes accept connections and never answer (the
# dashboard says DOWN), and the warm reconcile with default flags is timed
# instead, alternating this alp and OLD_REV's (by default the commit before
# the single X25519 key share of a node status read) RUNS times each
# (default 5), with each run's CPU time (alp's, and the devnet's) beside
# the wall; both run against this tree's devnet, or with OLD_DEVNET=1
# OLD_REV's alp against OLD_REV's devnet:
#   DEAD=15 [OLD_REV=rev [OLD_DEVNET=1]] bench/reconcile-fleet.sh [LATENCY]
# With HISTORY=N, a cold `alp registry sync` of a devnet whose registry has
# an N-version history (`alp devnet --history N`; the default fleet) is
# timed instead, alternating with a tenth of that history, RUNS times each
# (default 3), with the sync's CPU time and the devnet's beside the wall;
# with OLD_REV also OLD_REV's alp syncing from OLD_REV's devnet of N
# versions, in the same rotation:
#   HISTORY=50000 [OLD_REV=rev] bench/reconcile-fleet.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NIB_NET_GUARD:-}" ]; then exec scripts/netguard.sh "$0" "$@"; fi
latency=${1:-50ms}
if [ -n "${HISTORY:-}" ]; then
	work=$(mktemp -d)
	trap 'kill ${pids:-} 2>/dev/null || true; wait 2>/dev/null || true; git worktree remove --force "$work/old-src" 2>/dev/null || true; rm -rf "$work"' EXIT
	go build -o "$work/alp-new" ./cmd/alp
	# each devnet: name, binary, history
	devnets="new-$HISTORY:new:$HISTORY new-$((HISTORY / 10)):new:$((HISTORY / 10))"
	if [ -n "${OLD_REV:-}" ]; then
		git worktree add --detach -q "$work/old-src" "$OLD_REV"
		(cd "$work/old-src" && go build -o "$work/alp-old" ./cmd/alp)
		devnets="$devnets old-$HISTORY:old:$HISTORY"
	fi
	pids=
	for d in $devnets; do
		IFS=: read -r name bin h <<<"$d"
		"$work/alp-$bin" devnet --history "$h" --env-file "$work/env-$name" --dir "$work/d-$name" >"$work/devnet-$name.out" 2>&1 &
		pids="$pids $!"
		echo "$!" >"$work/pid-$name"
	done
	for d in $devnets; do
		name=${d%%:*}
		for _ in $(seq 3000); do [ -s "$work/env-$name" ] && break; sleep 0.1; done
		[ -s "$work/env-$name" ] || { echo "the devnet $name did not start" >&2; exit 1; }
	done
	sync_once() { # devnet binary run: "wall sync-cpu devnet-cpu" in seconds, and the JSON summary
		local t0 t1 pid
		pid=$(cat "$work/pid-$1")
		t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		(. "$work/env-$1" && XDG_CACHE_HOME=$work/cache-$1-$3 /usr/bin/time -o "$work/time" -f '%e %U %S' "$work/alp-$2" registry sync -o json) \
			>"$work/sync-$1-$3.json" 2>"$work/sync-$1-$3.err" || { cat "$work/sync-$1-$3.err" >&2; exit 1; }
		t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		awk -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" 'END {printf "%6.2f s wall, sync %5.2f s cpu, devnet %5.2f s cpu", $1, $2 + $3, (t1 - t0) / hz}' "$work/time"
	}
	echo "cold alp registry sync; the default fleet; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at the start"
	for r in $(seq "${RUNS:-3}"); do
		for d in $devnets; do
			IFS=: read -r name bin h <<<"$d"
			t=$(sync_once "$name" "$bin" "$r")
			label=$bin
			[ "$bin" = old ] && label=$(git rev-parse --short "$OLD_REV")
			printf '  %-8s history %6d, run %d: %s  %s\n' "$label" "$h" "$r" "$t" "$(tr -d '\n ' <"$work/sync-$name-$r.json" | sed 's/"path":"[^"]*"//')"
		done
	done
	echo "load $(cut -d' ' -f1 /proc/loadavg) at the end"
	exit 0
fi
if [ -n "${DEAD:-}" ]; then
	old_rev=${OLD_REV:-$(git log --format=%H --grep='^source: a node status read offers one key share' -1)^}
else
	old_rev=${OLD_REV:-$(git log --format=%H --grep='^ic/nns: a get_certified_changes_since reply whose delta subtree' -1)^}
fi
work=$(mktemp -d)
trap 'kill ${serve_pid:-} ${old_serve_pid:-} 2>/dev/null || true; wait 2>/dev/null || true; git worktree remove --force "$work/old-src" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/alp" ./cmd/alp
go build -o "$work/reconcilefleet" ./bench/reconcilefleet
git worktree add --detach -q "$work/old-src" "$old_rev"
(cd "$work/old-src" && go build -o "$work/alp-old" ./cmd/alp)
"$work/reconcilefleet" gen "$work/fleet" -dead "${DEAD:-0}"
"$work/reconcilefleet" serve -fleet "$work/fleet/fleet.json" -dir "$work/devnet" -latency "$latency" \
	-env "$work/devnet.env" -admin "$work/admin" &
serve_pid=$!
for _ in $(seq 600); do [ -s "$work/admin" ] && break; sleep 0.1; done
[ -s "$work/admin" ] || { echo "the devnet did not start" >&2; exit 1; }
admin=$(cat "$work/admin")
# With OLD_DEVNET=1 (DEAD mode), OLD_REV's alp reads OLD_REV's devnet (its
# bench/reconcilefleet serving the same fleet file) instead of this one's:
# the whole system as it was against as it is.
old_serve_pid=$serve_pid
if [ -n "${DEAD:-}" ] && [ -n "${OLD_DEVNET:-}" ]; then
	(cd "$work/old-src" && go build -o "$work/reconcilefleet-old" ./bench/reconcilefleet)
	"$work/reconcilefleet-old" serve -fleet "$work/fleet/fleet.json" -dir "$work/devnet-old" -latency "$latency" \
		-env "$work/devnet-old.env" -admin "$work/admin-old" &
	old_serve_pid=$!
	for _ in $(seq 600); do [ -s "$work/admin-old" ] && break; sleep 0.1; done
	[ -s "$work/admin-old" ] || { echo "OLD_REV's devnet did not start" >&2; exit 1; }
else
	cp "$work/devnet.env" "$work/devnet-old.env"
fi
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

if [ -n "${DEAD:-}" ]; then
	# one warm reconcile, default flags: "wall cpu server" in seconds, where
	# cpu is alp's user+sys (which load inflates far less than the wall) and
	# server the devnet's user+sys meanwhile (its TLS handshakes and
	# replies run on the same cores)
	warm() { # binary cache env-file devnet-pid
		local t0 t1
		t0=$(awk '{print $14 + $15}' "/proc/$4/stat")
		# shellcheck disable=SC1090
		(. "$3" && XDG_CACHE_HOME=$2 /usr/bin/time -o "$work/time" -f '%e %U %S' "$1" reconcile --config "$work/fleet/proposals.hcl" \
			--state "$work/state-$(basename "$2").json") >"$work/warm.out" 2>&1 || true
		t1=$(awk '{print $14 + $15}' "/proc/$4/stat")
		awk -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" 'END {printf "%.2f %.2f %.2f\n", $1, $2 + $3, (t1 - t0) / hz}' "$work/time"
	}
	median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	col() { awk -v c="$1" '{print $c}' "$2"; }
	warm "$work/alp" "$work/cache" "$work/devnet.env" "$serve_pid" >/dev/null
	warm "$work/alp-old" "$work/cache-old" "$work/devnet-old.env" "$old_serve_pid" >/dev/null
	: >"$work/new.t"
	: >"$work/old.t"
	load0=$(cut -d' ' -f1 /proc/loadavg)
	for _ in $(seq "${RUNS:-5}"); do
		warm "$work/alp" "$work/cache" "$work/devnet.env" "$serve_pid" >>"$work/new.t"
		lines=$(wc -l <"$work/warm.out")
		tail -1 "$work/warm.out" >"$work/new-verdict"
		warm "$work/alp-old" "$work/cache-old" "$work/devnet-old.env" "$old_serve_pid" >>"$work/old.t"
		tail -1 "$work/warm.out" >"$work/old-verdict"
	done
	echo "fleet: 40 subnets, 1500 nodes ($DEAD dead: accept, never answer), latency $latency; $(nproc) cores, load $load0 at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
	echo "warm reconcile, default flags, median of ${RUNS:-5} alternating runs (wall; alp's user+sys; the devnet's user+sys):"
	for which in new old; do
		if [ $which = new ]; then name="this alp"; else name="$(git rev-parse --short "$old_rev") (OLD_REV${OLD_DEVNET:+, its devnet})"; fi
		printf '  %-30s wall %5s s  cpu %5s s  devnet %5s s   (walls: %s)\n' "$name" \
			"$(col 1 "$work/$which.t" | median)" "$(col 2 "$work/$which.t" | median)" "$(col 3 "$work/$which.t" | median)" \
			"$(col 1 "$work/$which.t" | tr '\n' ' ')"
	done
	echo "  ratio new/old: wall $(echo "scale=2; $(col 1 "$work/new.t" | median) / $(col 1 "$work/old.t" | median)" | bc)," \
		"cpu $(echo "scale=2; $(col 2 "$work/new.t" | median) / $(col 2 "$work/old.t" | median)" | bc)"
	echo "  this alp's last output: $lines lines; $(cat "$work/new-verdict")"
	echo "  OLD_REV's last: $(cat "$work/old-verdict")"
	exit 0
fi
echo "fleet: 40 subnets, 1500 nodes, 300 operators, 120 providers; latency $latency; $(nproc) cores"
run "new, cold cache" "$work/alp" "$work/cache"
run "new, warm, no changes" "$work/alp" "$work/cache"
curl -s -X POST "$admin/change?n=20" >/dev/null
run "new, warm, 20 changed" "$work/alp" "$work/cache"
run "before ($(git rev-parse --short "$old_rev"))" "$work/alp-old" "$work/cache-old"
