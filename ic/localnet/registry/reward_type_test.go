package registry

import (
	"testing"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Type4 nodes may sit only in cloud engines, and cloud engines take only
// type4 nodes (check_node_type4_iff_cloud_engine), checked before the SEV
// invariant, as upstream orders them.
func TestType4NodesAndCloudEnginesGoTogether(t *testing.T) {
	r := fixture(t)
	type4, type1 := int32(7), int32(2)
	engineNode, engineNode2, plain := pid("node-type4"), pid("node-type4-b"), pid("node-type1")
	for _, n := range []Node{{ID: engineNode, RewardType: &type4}, {ID: engineNode2, RewardType: &type4}, {ID: plain, RewardType: &type1}} {
		n.Operator, n.IPv6 = operator, "::1"
		if _, err := r.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	engine := pid("subnet-engine")
	if _, err := r.AddSubnet(Subnet{ID: engine, ReplicaVersion: "v1", Type: nns.SubnetTypeCloudEngine, CostSchedule: nns.CostScheduleFree, Members: []principal.Principal{engineNode}}); err != nil {
		t.Fatal(err)
	}
	change := func(s principal.Principal, add ...principal.Principal) func() error {
		return func() error {
			return r.ChangeSubnetMembership(nns.ChangeSubnetMembershipPayload{SubnetID: s, NodeIDsAdd: add})
		}
	}
	refusedFirst(t, r, change(subnetA, engineNode2), "invariant check failed with message: Subnet "+subnetA.String()+" is not a cloud engine subnet but some nodes have reward type 4")
	refusedFirst(t, r, change(engine, plain), "invariant check failed with message: Subnet "+engine.String()+" is a cloud engine subnet but some nodes do not have reward type 4")
	refusedFirst(t, r, change(engine, free), "is a cloud engine subnet but some nodes do not have reward type 4")      // no type at all
	refusedFirst(t, r, change(subnetC, engineNode2), "is not a cloud engine subnet but some nodes have reward type 4") // before the missing chip
	if err := change(engine, engineNode2)(); err != nil {
		t.Fatalf("a type4 node joining a cloud engine: %v", err)
	}
	raw, _, _ := r.Get(nns.NodeRecordKey(engineNode2.String()))
	var rec nns.NodeRecordPB
	if err := rec.Unmarshal(raw); err != nil || nns.RewardTypeName(rec.RewardType) != "type4" {
		t.Fatalf("node record reward type %v, %v", nns.RewardTypeName(rec.RewardType), err)
	}
}
