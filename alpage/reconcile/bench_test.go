package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
)

// BenchmarkReconcile is the pure diff of a 1,000-node fleet (40 subnets of
// 25 members, 10 operators) that agrees with the live snapshot.
func BenchmarkReconcile(b *testing.B) {
	res := &config.Resources{
		NodeProviders:   []*config.NodeProvider{{Name: "p", ID: "p"}},
		GuestOSVersions: []*config.GuestOSVersion{{Name: "v", ID: "v", Default: true}},
	}
	live := &Live{
		Subnets: map[string]SubnetFacts{}, Providers: map[string]ProviderFacts{"p": {Known: true, Operators: map[string]string{}}},
		Operators: map[string]OperatorFacts{}, OperatorNodes: map[string]OperatorNodes{}, Nodes: map[string]NodeFacts{},
		Chips: map[string]ChipFacts{}, Versions: map[string]VersionFacts{}, Elected: map[string]bool{"v": true},
	}
	for o := 0; o < 10; o++ {
		id := fmt.Sprintf("op%02d", o)
		res.NodeOperators = append(res.NodeOperators, &config.NodeOperator{Name: id, ID: id, Provider: "p", DC: "dc"})
		live.Providers["p"].Operators[id] = "dc"
		live.Operators[id] = OperatorFacts{Found: true, Provider: "p", DC: "dc"}
	}
	for s := 0; s < 40; s++ {
		sid := fmt.Sprintf("s%02d", s)
		res.Subnets = append(res.Subnets, &config.Subnet{Name: sid, ID: sid})
		facts := SubnetFacts{Found: true, Type: "application", CostSchedule: "normal"}
		for i := 0; i < 25; i++ {
			id, op := fmt.Sprintf("n%04d", s*25+i), fmt.Sprintf("op%02d", (s*25+i)%10)
			res.Nodes = append(res.Nodes, &config.Node{Name: id, ID: id, Subnet: sid, Operator: op, Version: "v"})
			facts.Members = append(facts.Members, id)
			live.Nodes[id] = NodeFacts{Found: true, Operator: op}
			live.Versions[id] = VersionFacts{Version: "v", Source: FromNode}
			on := live.OperatorNodes[op]
			on.Nodes = append(on.Nodes, id)
			live.OperatorNodes[op] = on
		}
		live.Subnets[sid] = facts
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Reconcile(res, live); r.Drift != 0 {
			b.Fatal("drift")
		}
	}
}

// BenchmarkFetchTheExampleFleet reads everything reconcile needs about the
// devnet's default fleet (12 nodes, one unreachable node skipped so the
// number is the reads, not a connect timeout), chips cached.
func BenchmarkFetchTheExampleFleet(b *testing.B) {
	fleet, err := devnet.ParseFleet(devnet.DefaultFleet)
	if err != nil {
		b.Fatal(err)
	}
	d, err := devnet.Start(context.Background(), devnet.Options{Fleet: fleet, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	cfg, err := config.Load("../../examples/fleet/proposals.hcl")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range cfg.Nodes {
		if n.Name == "node_12" {
			n.Version = ""
		}
	}
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		b.Fatal(err)
	}
	ns, err := source.NewNodeStatus(d.NodeCAPath)
	if err != nil {
		b.Fatal(err)
	}
	f := &Fetcher{
		Registry: nns.RegistryClient{Caller: a}, Governance: nns.GovernanceClient{Caller: a},
		Explorer: source.NewExplorer(d.ExplorerURL, nil), Dashboard: source.NewDashboard(d.DashboardURL, nil),
		KDS: source.NewKDS(d.KDSURL, nil), NodeStatus: ns, Timeout: 10 * time.Second,
	}
	st := state.New()
	live, err := f.Fetch(context.Background(), &cfg.Resources, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	UpdateChips(st, live.Chips, time.Now())
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.Fetch(context.Background(), &cfg.Resources, st.Chips, false); err != nil {
			b.Fatal(err)
		}
	}
}
