package nns

import "testing"

func TestRewardTypesReadByNameAndNumber(t *testing.T) {
	for _, name := range []string{"type0", "type1", "type1.1", "type2", "type3", "type3.1", "type4", "type4.1", "type4.5"} {
		n, ok := RewardTypeNamed(name)
		if !ok || RewardTypeName(&n) != name {
			t.Errorf("%s: %d %v", name, n, ok)
		}
		if engine := name == "type4" || name[:min(len(name), 6)] == "type4."; IsCloudEngineNode(&n) != engine {
			t.Errorf("%s: cloud engine node %v", name, !engine)
		}
	}
	if _, ok := RewardTypeNamed("unspecified"); ok {
		t.Error("unspecified is a name to read, not one to declare")
	}
	odd := int32(40)
	if RewardTypeName(nil) != "" || RewardTypeName(&odd) != "reward type 40" || IsCloudEngineNode(nil) {
		t.Error("absent or unknown reward types")
	}
}

// The numbers an upstream file gives (the NodeType enum of node record
// field 20, in a generated registry.node.v1.rs; docs/decisions.md, ic/nns,
// "ResourceLimits field 4 and the NodeRewardType numbers") decode, from the
// wire, to the names they are declared with there.
func TestTheRewardTypeNumbersReadUpstreamDecodeToTheirNames(t *testing.T) {
	upstream := []string{1: "type0", 2: "type1", 3: "type2", 4: "type3", 5: "type3.1", 6: "type1.1"}
	for n := 1; n < len(upstream); n++ {
		var rec NodeRecordPB
		// field 20, varint: tag (20<<3)|0 = 160, as a varint a0 01
		if err := rec.Unmarshal([]byte{0xa0, 0x01, byte(n)}); err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		if got := RewardTypeName(rec.RewardType); got != upstream[n] || IsCloudEngineNode(rec.RewardType) {
			t.Errorf("node_reward_type %d reads %q (cloud engine %v), want %q, not a cloud engine node", n, got, IsCloudEngineNode(rec.RewardType), upstream[n])
		}
	}
}
