package reconcile

import (
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/state"
)

// An operator's declared allowance, rewardable nodes and IPv6 are held
// against its record, and a node's HostOS version against the
// hostos_version_id of its record, both read certified from the registry
// at the report's version: the devnet's records, not a node's answer.
func TestOperatorConfigAndHostOSDriftAreReadFromTheRegistryRecords(t *testing.T) {
	fleet := liveFleet()
	fleet.HostOSVersions = []string{"h-old", "h-new"}
	fleet.Nodes[0].HostOS = "h-old"
	fleet.Nodes[2].HostOS = "h-new"
	_, f, _ := startLiveFleet(t, fleet)

	res := quick()
	for _, n := range res.Nodes {
		n.Version, n.Chip = "", nil // neither the node nor KDS is asked
	}
	allowance := uint64(6)
	res.NodeOperators[0].NodeAllowance = &allowance
	res.NodeOperators[0].RewardableNodes = map[string]uint32{"type3.1": 2}
	res.HostOSVersions = []*config.HostOSVersion{{Name: "new", ID: "h-new", Default: true}}
	res.Nodes[0].HostOS = "h-new"                                  // runs h-old
	res.Nodes[2].HostOS = "h-new"                                  // runs it
	res.Nodes[3].HostOS, res.Nodes[3].HostOSOverride = "h-x", true // unelected
	live := fetch(t, f, res, state.New(), false)
	if live.Nodes[nodeA].HostOS != "h-old" || !live.HostOSElected["h-new"] || live.HostOSElected["h-x"] {
		t.Fatalf("read node a %+v, elected %v", live.Nodes[nodeA], live.HostOSElected)
	}
	r := Reconcile(res, live)

	if row := rowOf(t, r, SectionOperators, "ops", operatorID); row.Status != ConfigMismatch ||
		!strings.Contains(row.Detail, "node_allowance declared=6 live=4") || !strings.Contains(row.Detail, "rewardable_nodes declared={type3.1=2} live={}") {
		t.Errorf("operator row %+v", row)
	}
	if row := rowOf(t, r, SectionHostOS, "a", nodeA); row.Status != HostOSMismatch || row.Detail != "declared=new live=h-old" {
		t.Errorf("node a %+v", row)
	}
	if row := rowOf(t, r, SectionHostOS, "c", nodeC); row.Status != OK || row.Detail != "new" {
		t.Errorf("node c %+v", row)
	}
	if row := rowOf(t, r, SectionHostOS, "d", nodeD); row.Status != HostOSMismatch || !strings.HasSuffix(row.Detail, "NOT ELECTED [override]") {
		t.Errorf("node d %+v", row)
	}
	if r.InSync() {
		t.Error("the drift is in sync")
	}

	// declared as on-chain: in sync
	allowance = 4
	res.NodeOperators[0].RewardableNodes = nil
	res.Nodes[0].HostOS, res.Nodes[3].HostOS = "h-old", "h-new"
	res.Nodes[3].HostOSOverride = false
	again := Reconcile(res, fetch(t, f, res, state.New(), false))
	if row := rowOf(t, again, SectionOperators, "ops", operatorID); row.Status != OK {
		t.Errorf("operator row once declared as on-chain: %+v", row)
	}
	for _, s := range again.Sections {
		if s.Kind != SectionHostOS {
			continue
		}
		for _, row := range s.Rows {
			if row.Status != OK && row.ID != nodeD {
				t.Errorf("HostOS row once declared as on-chain: %+v", row)
			}
		}
	}
}
