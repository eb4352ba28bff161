package devnet

import (
	"sort"
	"testing"

	"alpnib.dev/alpage/config"
)

// TestTheExampleConfigDescribesTheDefaultFleetWithOneDrift keeps
// examples/fleet/{resources,proposals}.hcl in step with the fleet the devnet
// serves: the same subnet, members, operators and chips, and exactly one node
// running something other than what the config expects of it.
func TestTheExampleConfigDescribesTheDefaultFleetWithOneDrift(t *testing.T) {
	cfg, err := config.Load("../../examples/fleet/proposals.hcl")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Subnets) != 1 || cfg.Subnets[0].ID != f.Subnets[0].ID {
		t.Fatalf("subnets: %+v", cfg.Subnets)
	}
	def := cfg.DefaultGuestOSVersion()
	if def == nil || def.ID != f.Subnets[0].Version {
		t.Fatalf("the default version should be what the subnet runs, %s", f.Subnets[0].Version)
	}
	declared := map[string]*config.Node{}
	var members []string
	for _, n := range cfg.Nodes {
		declared[n.ID] = n
		if n.Subnet == cfg.Subnets[0].ID {
			members = append(members, n.ID)
		}
	}
	live := append([]string(nil), f.Subnets[0].Members...)
	sort.Strings(live)
	sort.Strings(members)
	if len(live) != len(members) {
		t.Fatalf("declared members %v, live %v", members, live)
	}
	for i := range live {
		if live[i] != members[i] {
			t.Fatalf("declared members %v, live %v", members, live)
		}
	}
	drifted := 0
	for _, n := range f.Nodes {
		d, ok := declared[n.ID]
		if !ok {
			t.Errorf("node %s is not declared", n.ID)
			continue
		}
		if d.Operator != n.Operator {
			t.Errorf("node %s: declared operator %s, live %s", n.ID, d.Operator, n.Operator)
		}
		if d.ChipID != n.ChipID {
			t.Errorf("node %s: declared chip %q, live %q", n.ID, d.ChipID, n.ChipID)
		}
		want := d.GuestOSVersion
		if want == "" {
			want = def.ID
		}
		if want != n.Version {
			drifted++
		}
	}
	if drifted != 1 {
		t.Fatalf("%d nodes drift from the config, want exactly one", drifted)
	}
	if len(cfg.Nodes) != len(f.Nodes) {
		t.Fatalf("%d nodes declared, %d live", len(cfg.Nodes), len(f.Nodes))
	}
	neuron, _ := f.IdentityNeuron()
	if cfg.Provider == nil || cfg.Provider.Neuron == nil || *cfg.Provider.Neuron != neuron {
		t.Fatalf("proposals.hcl should propose with neuron %d", neuron)
	}
	if len(cfg.Proposals) != 4 {
		t.Fatalf("%d proposals", len(cfg.Proposals))
	}
}
