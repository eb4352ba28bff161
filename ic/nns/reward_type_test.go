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
