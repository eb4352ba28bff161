package preflight

import (
	"context"
	"fmt"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/kinds"
)

// spreadFleet: subnet app holds m1..m4, one per data center dc1..dc4,
// each with its own provider and owner, in four countries; f1 is free in
// dc1 (beside m1), f5 free in dc5.
func spreadFleet() *devnet.Fleet {
	f := &devnet.Fleet{
		Versions: []devnet.FleetVersion{{ID: "v1"}},
		Subnets:  []devnet.FleetSubnet{{ID: subnet, Version: "v1", Members: []string{id("m1"), id("m2"), id("m3"), id("m4")}}},
	}
	countries := []string{"CH", "DE", "US", "SG", "JP"}
	for i := 1; i <= 5; i++ {
		dc, op, prov := fmt.Sprintf("dc%d", i), id(fmt.Sprintf("op%d", i)), id(fmt.Sprintf("prov%d", i))
		f.DataCenters = append(f.DataCenters, devnet.FleetDataCenter{ID: dc, Region: "Somewhere," + countries[i-1] + ",City", Owner: "owner" + dc})
		f.NodeProviders = append(f.NodeProviders, devnet.FleetProvider{ID: prov})
		f.NodeOperators = append(f.NodeOperators, devnet.FleetOperator{ID: op, Provider: prov, DC: dc, Allowance: 2})
	}
	node := func(name string, dc int) devnet.FleetNode {
		return devnet.FleetNode{ID: id(name), Operator: id(fmt.Sprintf("op%d", dc)), Version: "v1"}
	}
	f.Nodes = []devnet.FleetNode{node("m1", 1), node("m2", 2), node("m3", 3), node("m4", 4), node("f1", 1), node("f5", 5)}
	return f
}

func replacing(out, in string) *config.Proposal {
	return &config.Proposal{Name: "swap", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(in), Remove: refs(out)}}
}

func TestAMembershipChangeShowsEachCoefficientBeforeAndAfterAndFlagsADecrease(t *testing.T) {
	_, f := startFleet(t, spreadFleet())
	ctx := context.Background()
	// four members in four data centers: more than a third is 2 nodes, so
	// every coefficient is 2, and 2 is the default minimum for 4 nodes
	r, err := f.Run(ctx, replacing(id("m2"), id("f5")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictReady, map[Severity][]string{OK: {
		"Nakamoto coefficient node_provider: 2 → 2 (minimum 2, the default for 4 nodes)",
		"Nakamoto coefficient data_center: 2 → 2", "Nakamoto coefficient data_center_owner: 2 → 2", "Nakamoto coefficient country: 2 → 2",
	}}}.assert(t, "a swap into a fifth data center", r)

	r, err = f.Run(ctx, replacing(id("m2"), id("f1")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictFlagged, map[Severity][]string{Flagged: {
		"Nakamoto coefficient data_center: 2 → 1 (minimum 2, the default for 4 nodes); the change takes it below the subnet's minimum: dc1 holds 2 of 4 nodes",
		"Nakamoto coefficient node_provider: 2 → 1",
	}}}.assert(t, "a swap into a member's data center", r)

	// a declared minimum of 1 is not broken, but the decrease is still flagged
	r, err = f.Run(ctx, replacing(id("m2"), id("f1")), Options{Minimums: map[string]map[string]int{subnet: {"data_center": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictFlagged, map[Severity][]string{Flagged: {"Nakamoto coefficient data_center: 2 → 1 (minimum 1, declared); the change lowers it"}}}.assert(t, "declared minimum", r)
}
