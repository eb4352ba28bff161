package nns

import (
	"fmt"
	"strings"
)

// rewardTypeNames are the node reward types as the registry writes them in
// AddNodePayload and node operator records ("type3.1"), by the record's
// NodeRewardType number (ic/nns/registrypb/node.proto).
var rewardTypeNames = []string{"unspecified", "type0", "type1", "type2", "type3", "type3.1", "type1.1",
	"type4", "type4.1", "type4.2", "type4.3", "type4.4", "type4.5"}

// RewardTypeName is the name of a record's node_reward_type: "" for none
// (absent), the name for a known number, else "reward type N".
func RewardTypeName(t *int32) string {
	switch {
	case t == nil:
		return ""
	case *t >= 0 && int(*t) < len(rewardTypeNames):
		return rewardTypeNames[*t]
	}
	return fmt.Sprintf("reward type %d", *t)
}

// RewardTypeNamed is the record number of a reward type name ("type4",
// "type3.1"; case-insensitive); false for an unknown name.
func RewardTypeNamed(name string) (int32, bool) {
	for i, n := range rewardTypeNames {
		if strings.EqualFold(n, name) && i > 0 {
			return int32(i), true
		}
	}
	return 0, false
}

// IsCloudEngineNode reports whether a node of this reward type belongs in
// a cloud engine: type4 and its variants (check_node_type4_iff_cloud_engine
// in the registry's subnet invariants). An absent type is not.
func IsCloudEngineNode(t *int32) bool {
	return t != nil && *t >= 7 && *t <= 12
}
