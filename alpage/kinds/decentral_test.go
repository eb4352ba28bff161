package kinds

import (
	"fmt"
	"strings"
	"testing"

	"alpnib.dev/alpage/decentral"
)

// A 13-node subnet where DFINITY's provider holds 3 members and every other
// member has a provider, data center, owner and country of its own: what
// dre allows on the NNS alone (proposal 135700).
func dfinityHoldsThree() (members []string, places Places) {
	places = Places{Nodes: map[string]decentral.Node{}}
	for i := range 14 {
		id := fmt.Sprintf("m%02d", i)
		provider := fmt.Sprintf("p%02d", i)
		if i < 3 {
			provider = "dfinity"
		}
		places.Nodes[id] = decentral.NewNode(id, provider, fmt.Sprintf("dc%02d", i), fmt.Sprintf("o%02d", i), fmt.Sprintf("R,C%02d,X", i))
		if i < 13 {
			members = append(members, id)
		}
	}
	return members, places
}

func TestOnTheNNSDfinitysThreeNodesMeetTheDefaultMinimumAndElsewhereTheyDoNot(t *testing.T) {
	members, places := dfinityHoldsThree()
	swap := func(subnet string) Check {
		for _, c := range decentralization(subnet, members, []string{"m13"}, []string{"m12"}, places, nil) {
			if c.Field == "nakamoto.node_provider" {
				return c
			}
		}
		t.Fatalf("no node_provider row for %s", subnet)
		return Check{}
	}
	nns := swap(decentral.NNSSubnet)
	if nns.Severity != OK || !strings.Contains(nns.Message, "node_provider: 3 → 3 (minimum 3, dre's default for the NNS subnet of 13 nodes)") {
		t.Errorf("on the NNS: %s %q", nns.Severity, nns.Message)
	}
	other := swap("qdvhd-os4o2-zzrdw-xrcv4-gljou-eztdp-bj326-e6jgr-tkhuc-ql6v2-yqe")
	if other.Severity != Warning || !strings.Contains(other.Message, "node_provider: 3 → 3 (minimum 5, the default for 13 nodes); it is below the minimum already") {
		t.Errorf("elsewhere: %s %q", other.Severity, other.Message)
	}
}
