package preflight

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// fleet: subnet app (n1, unreachable) on v1; n2 free and healthy, "down"
// free and unreachable, "lagging" free and behind; operator op owns them
// all; v2 elected, v3 not.
func testFleet() *devnet.Fleet {
	no := false
	return &devnet.Fleet{
		DataCenters:   []devnet.FleetDataCenter{{ID: "dc"}},
		NodeProviders: []devnet.FleetProvider{{ID: id("provider")}},
		NodeOperators: []devnet.FleetOperator{{ID: id("op"), Provider: id("provider"), DC: "dc", Allowance: 4}},
		Versions:      []devnet.FleetVersion{{ID: "v1", Release: "rel-1"}, {ID: "v2", Release: "rel-2"}, {ID: "v3", Elected: &no}},
		Subnets:       []devnet.FleetSubnet{{ID: subnet, Version: "v1", Members: []string{n1}}},
		Nodes: []devnet.FleetNode{
			{ID: n1, Operator: id("op"), Version: "v1", Reachable: &no},
			{ID: n2, Operator: id("op"), Version: "v1"},
			{ID: id("down"), Operator: id("op"), Version: "v1", Reachable: &no},
			{ID: id("lagging"), Operator: id("op"), Version: "v1", Health: devnet.Lagging},
		},
	}
}

func startDevnet(t *testing.T) (*devnet.Devnet, *Fetcher) { return startDevnetB(t) }

func startDevnetB(t testing.TB) (*devnet.Devnet, *Fetcher) { return startFleet(t, testFleet()) }

func startFleet(t testing.TB, fleet *devnet.Fleet) (*devnet.Devnet, *Fetcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := source.NewNodeStatus(d.NodeCAPath)
	if err != nil {
		t.Fatal(err)
	}
	return d, &Fetcher{
		Registry:   nns.RegistryClient{Caller: a},
		Governance: nns.GovernanceClient{Caller: a},
		Explorer:   source.NewExplorer(d.ExplorerURL, nil),
		Dashboard:  source.NewDashboard(d.DashboardURL, nil),
		NodeStatus: ns,
	}
}

// failingVersions fails every replica_version_ read, as a registry that
// cannot be reached for that one lookup.
type failingVersions struct{ Registry }

func (f failingVersions) GetValue(ctx context.Context, key string, v uint64) ([]byte, uint64, bool, error) {
	if strings.HasPrefix(key, "replica_version_") {
		return nil, 0, false, errors.New("registry unavailable")
	}
	return f.Registry.GetValue(ctx, key, v)
}

func deploy(version string) *config.Proposal {
	return &config.Proposal{Name: "d", Kind: config.KindDeployGuestOS, Body: &kinds.DeployGuestOS{SubnetID: subnet, ReplicaVersionID: version}}
}

func TestTheFetcherReadsTheDevnetAndPinsTheRegistryVersion(t *testing.T) {
	d, f := startDevnet(t)
	ctx := context.Background()
	r, err := f.Run(ctx, deploy("v2"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictReady || r.RegistryVersion != d.Registry.Version() || len(r.PayloadSHA256) != 64 {
		t.Fatalf("report %+v\n%s", r, dump(r))
	}
	expect{VerdictReady, map[Severity][]string{Note: {"release rel-2"}}}.assert(t, "deploy v2", r)

	r, err = f.Run(ctx, deploy("v3"), Options{})
	if err != nil || r.Verdict != VerdictRefused {
		t.Fatalf("unelected: %v %s\n%s", err, r.Verdict, dump(r))
	}
	m := &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n2, n3)}}
	r, err = f.Run(ctx, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictRefused, map[Severity][]string{OK: {n2}, Refused: {n3 + " is not registered"}}}.assert(t, "membership", r)
}

func TestTheFetcherSaysWhichNodesHaveAChipForASevSubnet(t *testing.T) {
	fleet := testFleet()
	on := true
	fleet.Subnets[0].SevEnabled = &on
	fleet.Nodes[0].ChipID = "0a0b"
	fleet.Nodes = append(fleet.Nodes, devnet.FleetNode{ID: n3, Operator: id("op"), Version: "v1", ChipID: "0c0d", Reachable: fleet.Nodes[1].Reachable})
	_, f := startFleet(t, fleet)
	m := &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n2, n3)}}
	r, err := f.Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictRefused, map[Severity][]string{Refused: {n2 + " has no chip id"}, OK: {n3}}}.assert(t, "sev membership", r)
}

// versionsRead records the registry version of every get_value.
type versionsRead struct {
	Registry
	mu   sync.Mutex
	seen map[uint64]int
}

func (v *versionsRead) GetValue(ctx context.Context, key string, at uint64) ([]byte, uint64, bool, error) {
	v.mu.Lock()
	v.seen[at]++
	v.mu.Unlock()
	return v.Registry.GetValue(ctx, key, at)
}

func TestEveryRecordIsReadAtTheVersionTheReportPrints(t *testing.T) {
	d, f := startDevnet(t)
	reads := &versionsRead{Registry: f.Registry, seen: map[uint64]int{}}
	f.Registry = reads
	m := &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n2)}}
	r, err := f.Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Registry.Version(); r.RegistryVersion != v || len(reads.seen) != 1 || reads.seen[v] == 0 {
		t.Fatalf("report at %d, get_value versions %v", r.RegistryVersion, reads.seen)
	}
}

// behind reports an older latest version than the registry has, as if
// the registry moved while preflight was reading.
type behind struct {
	nns.RegistryClient
	version uint64
}

func (b behind) GetLatestVersion(context.Context) (uint64, error) { return b.version, nil }

func TestTheSubnetRecordIsReadAtTheVersionTheReportPrintsToo(t *testing.T) {
	d, f := startDevnet(t)
	before := d.Registry.Version()
	// n2 joins the subnet after the version was read
	rec, _, _ := d.Registry.Subnet(principal.MustDecode(subnet))
	members := append(rec.Membership, principal.MustDecode(n2).Bytes())
	rec.Membership = members
	d.Registry.Apply([]registry.Mutation{{Key: nns.SubnetRecordKey(subnet), Value: rec.Marshal()}})
	f.Registry = behind{RegistryClient: f.Registry.(nns.RegistryClient), version: before}
	m := &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n2)}}
	r, err := f.Run(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.RegistryVersion != before || r.Verdict != VerdictReady {
		t.Fatalf("at version %d (report %d) n2 is not yet a member, so adding it is ready:\n%s", before, r.RegistryVersion, dump(r))
	}
}

func TestThirdPartiesThatCannotBeReadDegradeChecks(t *testing.T) {
	_, f := startDevnet(t)
	ctx := context.Background()
	dead := "http://127.0.0.1:1"
	f.Dashboard = source.NewDashboard(dead, nil)
	r, err := f.Run(ctx, deploy("v2"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictReady, map[Severity][]string{Note: {"release name unavailable"}}}.assert(t, "dashboard down", r)

	f.Registry = failingVersions{f.Registry}
	r, err = f.Run(ctx, deploy("v2"), Options{ForApply: true})
	if err != nil || r.Verdict != VerdictReady {
		t.Fatalf("explorer fallback: %v %s\n%s", err, r.Verdict, dump(r))
	}
	if c := r.Checks[1]; c.Source != source.ExplorerLabel || !strings.Contains(c.Message, "is elected") {
		t.Fatalf("elected check not labelled as the explorer's: %+v", c)
	}

	f.Explorer = source.NewExplorer(dead, nil)
	r, _ = f.Run(ctx, deploy("v2"), Options{ForApply: true})
	expect{VerdictRefused, map[Severity][]string{Refused: {"could not tell whether v2 is elected"}}}.assert(t, "apply, no source", r)
	r, _ = f.Run(ctx, deploy("v2"), Options{})
	expect{VerdictReady, map[Severity][]string{Warning: {"could not tell whether v2 is elected"}}}.assert(t, "plan, no source", r)

	ops := &config.Proposal{Name: "o", Kind: config.KindRemoveNodeOperators, Body: &kinds.RemoveNodeOperators{Operators: []string{id("op")}}}
	r, err = f.Run(ctx, ops, Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictReady, map[Severity][]string{Warning: {"could not list the nodes of operator"}}}.assert(t, "explorer down", r)
}

func TestAnUnreachableRegistryIsAnError(t *testing.T) {
	a, err := agent.New(agent.Config{URL: "http://127.0.0.1:1", FetchRootKey: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := &Fetcher{Registry: nns.RegistryClient{Caller: a}}
	if _, err := f.Run(context.Background(), deploy("v2"), Options{}); err == nil {
		t.Fatal("preflight without a registry succeeded")
	}
}

func TestTheFetcherReadsWhatANodeOrAVersionNeedsEvenForASubnetTheRegistryLacks(t *testing.T) {
	_, f := startDevnet(t)
	ctx := context.Background()
	d := deploy("v3")
	d.Body.(*kinds.DeployGuestOS).SubnetID = other
	r, err := f.Run(ctx, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictRefused, map[Severity][]string{Refused: {"subnet " + other + " is not in the registry", "version v3 is not elected"}}}.assert(t, "deploy", r)
	m := &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: other, Add: refs(n1, n3)}}
	if r, err = f.Run(ctx, m, Options{}); err != nil {
		t.Fatal(err)
	}
	expect{VerdictRefused, map[Severity][]string{Refused: {"not in the registry", n1 + " is a member of another subnet, " + subnet, n3 + " is not registered"}}}.assert(t, "membership", r)
}
