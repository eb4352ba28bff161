#!/usr/bin/env bash
# `make demo`: runs both products on embedded defaults, offline, and says
# what you are looking at at each step. Its closing summary is what the
# parts recorded as they ran (scripts/demo-summary.sh): each step that ran,
# each part that was skipped and why.
set -uo pipefail
bin=$(cd "${1:-bin}" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/demo-summary.sh
. "$repo/scripts/demo-summary.sh"
work=$(mktemp -d /tmp/alpnib-demo.XXXXXX)
export NIB_DEMO_SUMMARY="$work/summary.tsv"
: >"$NIB_DEMO_SUMMARY"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
explain() { printf '\033[2m%s\033[0m\n' "$*"; }
run() { printf '\033[36m$ %s\033[0m\n' "$*"; "$@"; rc=$?; [ $rc -ne 0 ] && printf '\033[2m(exit status %d)\033[0m\n' $rc; return 0; }
# step WANT WHAT CMD…: run CMD and record it, as ran (saying WHAT) when it
# exits WANT, the status the story expects (2 for drift or a refused
# plan), else as failed with the status it gave.
step() {
  local want=$1 what=$2
  shift 2
  run "$@"
  local name=${*#"$bin/"}
  if [ "$rc" = "$want" ]; then record ran "$name" "$what"; else record failed "$name" "exit $rc, expected $want ($what)"; fi
}
# summary prints the closing summary.
summary() {
  say "What ran"
  print_summary
  echo "Everything was built from this checkout into bin/; the working files are in $work."
  echo "The docs are in docs/ (docs/cli/ has every command; config.md is the alp configuration reference)."
}

say "alp $("$bin/alp" version): declarative node-fleet management for the Internet Computer"
explain "alp devnet starts an offline Internet Computer on 127.0.0.1: a local NNS (registry and
governance canisters behind the real IC HTTP interface, BLS-certified) plus stand-ins for the
registry explorer, the ICP dashboard, node status endpoints and AMD's KDS, seeded from the
example fleet (examples/fleet/fleet.json). It writes an identity that controls neuron 4242."
cp -r "$repo/examples/fleet" "$work/fleet"
"$bin/alp" devnet --env-file "$work/devnet.env" --dir "$work/devnet" >"$work/devnet.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/devnet.env" ] && break; sleep 0.1; done
if [ ! -s "$work/devnet.env" ]; then
  echo "alp devnet did not start; its log:"; cat "$work/devnet.log"
  record failed "alp devnet" "it did not start within 10 s (its log is above)"
  summary
  exit 1
fi
cat "$work/devnet.env"
# shellcheck disable=SC1091
. "$work/devnet.env"
record ran "alp devnet" "a local NNS and the explorer, dashboard, KDS and node-status stand-ins on 127.0.0.1"
cd "$work/fleet"

say "alp list — every declared proposal (examples/fleet/proposals.hcl) against state.json, offline"
step 0 "each proposal against state.json, offline" "$bin/alp" list

say "alp reconcile — the CI gate: everything resources.hcl declares against the live network"
explain "Membership, operators, nodes, chip ids (vouched for by AMD KDS, cached in state.json) and the
GuestOS each node runs. node_05 still runs the previous release, so it exits 2 after the full report;
node_12 is unreachable and is read from the dashboard, labelled \"via dashboard\". Registry facts come
from a certified local copy of the registry (get_certified_changes_since, verified under the root key),
kept in the demo's own cache folder: the first line says its version and how many deltas it fetched."
export XDG_CACHE_HOME="$work/cache"
step 2 "exit 2: the drift the example fleet has (node_05's GuestOS), node_12 read via the dashboard" "$bin/alp" reconcile

say "alp plan — preflight each unsubmitted proposal against live state"
explain "One is ready, one is a no-op, and one is refused: the registry never lets sev_enabled change.
A flagged or refused plan exits 2, so CI can gate on it."
step 2 "exit 2: sev-on-app1 refused, the others ready or no-op" "$bin/alp" plan

say "alp apply add-node-08 — identity, dry run on a fresh local NNS seeded with the live records, neuron access, preflight"
explain "Without --yes nothing is sent."
step 0 "the dry run on a local NNS, nothing sent" "$bin/alp" apply add-node-08

say "alp apply sev-on-app1 — the dry run executes the proposal and the registry refuses it, before anything is sent"
step 2 "exit 2: the dry run's registry refused it before anything was sent" "$bin/alp" apply sev-on-app1

say "alp apply add-node-08 --yes — typing 'submit' confirms; the proposal is made with neuron 4242 and recorded"
echo submit | step 0 "submitted with neuron 4242 and recorded in state.json" "$bin/alp" apply add-node-08 --yes

say "alp status — read the proposal back from governance and record its status"
step 0 "the proposal read back from governance" "$bin/alp" status
run cat state.json

say "alp list — the submitted proposal is now in sync with state.json"
step 0 "the submitted proposal in sync with state.json" "$bin/alp" list

cd "$repo"
say "nibrunnerd $("$bin/nibrunnerd" version): a host for hundreds of microVMs, converging on desired.json"
nib_rc=0
"$repo/scripts/demo-nibrunner.sh" "$bin" || nib_rc=$?

if [ "${NIB_NET_GUARD:-}" = 1 ]; then
  record ran "network guard" "everything above ran in a network namespace with only loopback (scripts/netguard.sh): nothing could leave this machine"
else
  record skipped "network guard" "not in a loopback-only namespace (make demo as root puts it in one); everything above still talked only to 127.0.0.1"
fi
summary
exit $nib_rc
