#!/usr/bin/env bash
# `make demo`: runs both products on embedded defaults, offline, and says
# what you are looking at at each step.
set -uo pipefail
bin=$(cd "${1:-bin}" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/alpnib-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
explain() { printf '\033[2m%s\033[0m\n' "$*"; }
run() { printf '\033[36m$ %s\033[0m\n' "$*"; "$@"; rc=$?; [ $rc -ne 0 ] && printf '\033[2m(exit status %d)\033[0m\n' $rc; return 0; }

say "alp $("$bin/alp" version | cut -d' ' -f2): declarative node-fleet management for the Internet Computer"
explain "alp devnet starts an offline Internet Computer on 127.0.0.1: a local NNS (registry and
governance canisters behind the real IC HTTP interface, BLS-certified) plus stand-ins for the
registry explorer, the ICP dashboard, node status endpoints and AMD's KDS, seeded from the
example fleet (examples/fleet/fleet.json). It writes an identity that controls neuron 4242."
cp -r "$repo/examples/fleet" "$work/fleet"
"$bin/alp" devnet --env-file "$work/devnet.env" --dir "$work/devnet" >"$work/devnet.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/devnet.env" ] && break; sleep 0.1; done
if [ ! -s "$work/devnet.env" ]; then
  echo "alp devnet did not start; its log:"; cat "$work/devnet.log"; exit 1
fi
cat "$work/devnet.env"
# shellcheck disable=SC1091
. "$work/devnet.env"
cd "$work/fleet"

say "alp list — every declared proposal (examples/fleet/proposals.hcl) against state.json, offline"
run "$bin/alp" list

say "alp reconcile — the CI gate: everything resources.hcl declares against the live network"
explain "Membership, operators, nodes, chip ids (vouched for by AMD KDS, cached in state.json) and the
GuestOS each node runs. node_05 still runs the previous release, so it exits 2 after the full report;
node_12 is unreachable and is read from the dashboard, labelled \"via dashboard\"."
run "$bin/alp" reconcile

say "alp plan — preflight each unsubmitted proposal against live state"
explain "One is ready, one is a no-op, and one is refused: the registry never lets sev_enabled change.
A flagged or refused plan exits 2, so CI can gate on it."
run "$bin/alp" plan

say "alp apply add-node-08 — identity, dry run on a fresh local NNS seeded with the live records, neuron access, preflight"
explain "Without --yes nothing is sent."
run "$bin/alp" apply add-node-08

say "alp apply sev-on-app1 — the dry run executes the proposal and the registry refuses it, before anything is sent"
run "$bin/alp" apply sev-on-app1

say "alp apply add-node-08 --yes — typing 'submit' confirms; the proposal is made with neuron 4242 and recorded"
echo submit | run "$bin/alp" apply add-node-08 --yes

say "alp status — read the proposal back from governance and record its status"
run "$bin/alp" status
run cat state.json

say "alp list — the submitted proposal is now in sync with state.json"
run "$bin/alp" list

cd "$repo"
say "nibrunnerd $("$bin/nibrunnerd" version | cut -d' ' -f2): a host for hundreds of microVMs, converging on desired.json"
"$repo/scripts/demo-nibrunner.sh" "$bin" || exit 1

say "What you just saw"
cat <<TXT
alp ran its real code paths — Candid payloads, signed and certified IC HTTP calls, preflight,
the dry run, submission and state.json — against a local NNS; nothing left this machine$(
  [ "${NIB_NET_GUARD:-}" = 1 ] && printf ' (make demo ran\nit in a network namespace with only loopback, scripts/netguard.sh, so nothing could)').
nibrunnerd booted the counter app in a microVM (QEMU; the fake VMM without root or QEMU), put it
to sleep on request and woke it from its snapshot with its memory and its volume intact.
Everything was built from this checkout into bin/; the working files are in $work.
The docs are in docs/ (config.md is the alp configuration reference).
TXT
