package reconcile

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func pid(tag string) string { return principal.SelfAuthenticating([]byte(tag)).String() }

var (
	subnetID                           = pid("subnet")
	nodeA, nodeB, nodeC, nodeD         = pid("a"), pid("b"), pid("c"), pid("d")
	chipA, chipC, chipD                = strings.Repeat("a1", 64), strings.Repeat("c3", 64), strings.Repeat("d4", 64)
	operatorID, providerID             = pid("operator"), pid("provider")
	reachable, unreachable             = true, false
	versionCurrent, versionDashboardID = "v-current", "v-current"
)

// liveFleet: node a answers its status endpoint and AMD knows its chip;
// node b is unreachable (its version comes from the dashboard); node c's
// chip is rate limited at KDS; node d's chip is one AMD does not know.
func liveFleet() *devnet.Fleet {
	return &devnet.Fleet{
		DataCenters:   []devnet.FleetDataCenter{{ID: "zh1", Region: "Europe,CH,Zurich"}},
		NodeProviders: []devnet.FleetProvider{{ID: providerID}},
		NodeOperators: []devnet.FleetOperator{{ID: operatorID, Provider: providerID, DC: "zh1", Allowance: 4}},
		Versions:      []devnet.FleetVersion{{ID: versionCurrent, Release: "rel"}},
		Subnets:       []devnet.FleetSubnet{{ID: subnetID, Version: versionCurrent, Members: []string{nodeA, nodeB}}},
		Nodes: []devnet.FleetNode{
			{ID: nodeA, Operator: operatorID, Version: versionCurrent, ChipID: chipA, ChipProduct: "Milan-B0", Reachable: &reachable},
			{ID: nodeB, Operator: operatorID, Version: "v-old", DashboardVersion: versionDashboardID, Reachable: &unreachable},
			{ID: nodeC, Operator: operatorID, Version: versionCurrent, ChipID: chipC, ChipProduct: "Genoa-B1", ChipRateLimited: true},
			{ID: nodeD, Operator: operatorID, Version: versionCurrent, ChipID: chipD},
		},
	}
}

// quick is declared() without the version check of node b, whose dial to
// an address nothing routes takes seconds; for tests about other things.
func quick() *config.Resources {
	res := declared()
	res.Nodes[1].Version = ""
	return res
}

func declared() *config.Resources {
	dec := func(h string) []byte { b, _ := hex.DecodeString(h); return b }
	return &config.Resources{
		Subnets:         []*config.Subnet{{Name: "app", ID: subnetID}},
		DataCenters:     []*config.DataCenter{{Name: "zurich", ID: "zh1", Region: "Europe,CH,Zurich"}},
		NodeProviders:   []*config.NodeProvider{{Name: "prov", ID: providerID}},
		NodeOperators:   []*config.NodeOperator{{Name: "ops", ID: operatorID, Provider: providerID, DC: "zh1"}},
		GuestOSVersions: []*config.GuestOSVersion{{Name: "current", ID: versionCurrent, Default: true}},
		Nodes: []*config.Node{
			{Name: "a", ID: nodeA, Subnet: subnetID, Operator: operatorID, Version: versionCurrent, Chip: dec(chipA)},
			{Name: "b", ID: nodeB, Subnet: subnetID, Operator: operatorID, Version: versionCurrent},
			{Name: "c", ID: nodeC, Operator: operatorID, Version: versionCurrent, Chip: dec(chipC)},
			{Name: "d", ID: nodeD, Operator: operatorID, Version: versionCurrent, Chip: dec(chipD)},
		},
	}
}

// countingKDS records which chips were asked about.
type countingKDS struct {
	KDS
	mu    sync.Mutex
	asked map[string]int
}

func (c *countingKDS) Verify(ctx context.Context, chip []byte) source.Verdict {
	c.mu.Lock()
	c.asked[hex.EncodeToString(chip)]++
	c.mu.Unlock()
	return c.KDS.Verify(ctx, chip)
}

func startLive(t *testing.T) (*devnet.Devnet, *Fetcher, *countingKDS) {
	t.Helper()
	return startLiveFleet(t, liveFleet())
}

// startLiveFleet is startLive on another fleet.
func startLiveFleet(t *testing.T, fleet *devnet.Fleet) (*devnet.Devnet, *Fetcher, *countingKDS) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	// Parallel reads can leave a dialled connection unused, which the
	// devnet's shutdown waits 5 seconds for; close those first.
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := source.NewNodeStatus(d.NodeCAPath)
	if err != nil {
		t.Fatal(err)
	}
	kds := &countingKDS{KDS: source.NewKDS(d.KDSURL, nil), asked: map[string]int{}}
	return d, &Fetcher{
		Registry:   nns.RegistryClient{Caller: a},
		Governance: nns.GovernanceClient{Caller: a},
		Explorer:   source.NewExplorer(d.ExplorerURL, nil),
		Dashboard:  source.NewDashboard(d.DashboardURL, nil),
		KDS:        kds,
		NodeStatus: ns,
		Timeout:    10 * time.Second,
	}, kds
}

func fetch(t *testing.T, f *Fetcher, res *config.Resources, st *state.State, refresh bool) *Live {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	live, err := f.Fetch(ctx, res, st.Chips, refresh)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// wantVersionSources: node a read from itself, unreachable node b from
// the dashboard.
func wantVersionSources(t *testing.T, live *Live) {
	t.Helper()
	if v := live.Versions[nodeA]; v.Source != FromNode || v.Version != versionCurrent {
		t.Fatalf("node a: %+v", v)
	}
	if v := live.Versions[nodeB]; v.Source != FromDashboard || v.Version != versionDashboardID {
		t.Fatalf("node b: %+v", v)
	}
}

func TestAnUnreachableNodeIsReadFromTheDashboardAndLabelled(t *testing.T) {
	_, f, _ := startLive(t)
	res := declared()
	live := fetch(t, f, res, state.New(), false)
	wantVersionSources(t, live)
	r := Reconcile(res, live)
	if row := rowOf(t, r, SectionVersions, "b", nodeB); row.Status != OK || !strings.HasSuffix(row.Detail, "via dashboard (status DOWN)") {
		t.Fatalf("row %+v", row)
	}
	if row := rowOf(t, r, SectionVersions, "a", nodeA); strings.Contains(row.Detail, "dashboard") {
		t.Fatalf("a node read directly labelled as the dashboard's: %+v", row)
	}
}

// perNodeCounting is the devnet's dashboard, counting the requests for
// one node alone.
type perNodeCounting struct {
	*source.Dashboard
	perNode atomic.Int32
}

func (d *perNodeCounting) Node(ctx context.Context, id string) (source.DashboardNode, bool, error) {
	d.perNode.Add(1)
	return d.Dashboard.Node(ctx, id)
}

func (d *perNodeCounting) NodeVersion(ctx context.Context, id string) (string, bool, error) {
	d.perNode.Add(1)
	return d.Dashboard.NodeVersion(ctx, id)
}

// With the dashboard's list of nodes, the node that does not answer (it
// refuses) is answered from the list with no request of its own, and the
// live one is read from itself.
func TestTheDashboardsListAnswersForTheNodesItSaysAreDown(t *testing.T) {
	d, f, _ := startLive(t)
	dash := &perNodeCounting{Dashboard: source.NewDashboard(d.DashboardURL, nil)}
	f.Dashboard = dash
	res := declared()
	live := fetch(t, f, res, state.New(), false)
	wantVersionSources(t, live)
	if n := dash.perNode.Load(); n != 0 {
		t.Fatalf("%d per-node dashboard request(s), want none: the list said it all", n)
	}
}

func TestANodeNeitherItNorTheDashboardAnswersForIsUnreachableNotDrift(t *testing.T) {
	_, f, _ := startLive(t)
	f.Dashboard = source.NewDashboard("http://127.0.0.1:1", nil) // nothing listens
	res := declared()
	r := Reconcile(res, fetch(t, f, res, state.New(), false))
	row := rowOf(t, r, SectionVersions, "b", nodeB)
	if row.Status != Unreachable || row.Drift || !strings.Contains(row.Detail, "dashboard:") {
		t.Fatalf("row %+v", row)
	}
}

func TestTheFetchedFleetReconcilesAgainstTheDevnet(t *testing.T) {
	_, f, _ := startLive(t)
	res := quick()
	r := Reconcile(res, fetch(t, f, res, state.New(), false))
	for _, c := range []struct {
		kind, name, id string
		status         Status
	}{
		{SectionSubnet, "a", nodeA, InSync},
		{SectionSubnet, "type", subnetID, InSync},
		{SectionDataCenters, "zurich", "zh1", OK},
		{SectionOperators, "ops", operatorID, OK},
		{SectionOperators, "prov", providerID, OK},
		{SectionNodes, "c", nodeC, OK},
		{SectionChips, "a", nodeA, InSync},
		{SectionChips, "c", nodeC, Unknown}, // rate limited: inconclusive, not drift
		{SectionChips, "d", nodeD, AMDUnverified},
	} {
		if row := rowOf(t, r, c.kind, c.name, c.id); row.Status != c.status {
			t.Errorf("%s %s: %+v, want %s", c.kind, c.name, row, c.status)
		}
	}
}

func TestAVersionANodeReportedOverUncheckedTLSIsLabelled(t *testing.T) {
	_, f, _ := startLive(t)
	ns, err := source.NewNodeStatus("")
	if err != nil {
		t.Fatal(err)
	}
	f.NodeStatus = ns
	res := quick()
	row := rowOf(t, Reconcile(res, fetch(t, f, res, state.New(), false)), SectionVersions, "a", nodeA)
	if row.Status != OK || !strings.HasSuffix(row.Detail, UnverifiedNodeLabel) {
		t.Fatalf("row %+v", row)
	}
}

func TestChipVerdictsAreCachedPositiveOnlyAndRefreshedOnRequest(t *testing.T) {
	_, f, kds := startLive(t)
	res := quick()
	st := state.New()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	// First run: every on-chain chip is asked; only the verified one is kept.
	live := fetch(t, f, res, st, false)
	if !UpdateChips(st, live.Chips, now) {
		t.Fatal("a verified chip did not change the state")
	}
	if e := st.Chips[chipA]; e == nil || !e.Verified || e.Product != "Milan-B0" || e.VerifiedAt != state.TimeOf(now) {
		t.Fatalf("chip a: %+v", e)
	}
	if st.Chips[chipC] != nil || st.Chips[chipD] != nil {
		t.Fatalf("an inconclusive or refused verdict was cached: %+v", st.Chips)
	}

	// Second run: the cached chip is not asked again, the others are.
	kds.asked = map[string]int{}
	live = fetch(t, f, res, st, false)
	if kds.asked[chipA] != 0 || kds.asked[chipC] != 1 || kds.asked[chipD] != 1 {
		t.Fatalf("asked %v", kds.asked)
	}
	if row := rowOf(t, Reconcile(res, live), SectionChips, "a", nodeA); !strings.Contains(row.Detail, "(cached)") {
		t.Fatalf("row %+v", row)
	}
	if UpdateChips(st, live.Chips, now.Add(time.Hour)) {
		t.Fatal("nothing new, yet the state changed")
	}

	// --refresh-chips: a cached chip AMD now refuses is dropped; a cached
	// chip KDS answers inconclusively for is kept.
	st.Chips[chipD] = &state.Chip{Verified: true, Product: "Milan-B0", VerifiedAt: state.TimeOf(now)}
	st.Chips[chipC] = &state.Chip{Verified: true, Product: "Genoa-B1", VerifiedAt: state.TimeOf(now)}
	kds.asked = map[string]int{}
	live = fetch(t, f, res, st, true)
	if kds.asked[chipA] != 1 || kds.asked[chipC] != 1 || kds.asked[chipD] != 1 {
		t.Fatalf("refresh asked %v", kds.asked)
	}
	if !UpdateChips(st, live.Chips, now.Add(2*time.Hour)) {
		t.Fatal("a refusal did not change the state")
	}
	if st.Chips[chipD] != nil {
		t.Fatal("a refused chip kept its cached verdict")
	}
	if e := st.Chips[chipC]; e == nil || e.VerifiedAt != state.TimeOf(now) {
		t.Fatalf("an inconclusive answer changed the cached verdict: %+v", e)
	}
	if e := st.Chips[chipA]; e == nil || e.VerifiedAt != state.TimeOf(now) {
		t.Fatalf("a re-verified chip with the same product was rewritten: %+v", e)
	}
	r := Reconcile(res, live)
	if row := rowOf(t, r, SectionChips, "c", nodeC); row.Status != InSync || !strings.Contains(row.Detail, "cached; asking again was inconclusive") {
		t.Fatalf("row %+v", row)
	}
	if row := rowOf(t, r, SectionChips, "d", nodeD); row.Status != AMDUnverified {
		t.Fatalf("row %+v", row)
	}
}

func TestTheRegistryVersionIsTheOneHardRequirement(t *testing.T) {
	f := &Fetcher{Registry: nns.RegistryClient{Caller: downCaller{}}, Timeout: time.Second}
	if _, err := f.Fetch(context.Background(), declared(), nil, false); err == nil || !strings.Contains(err.Error(), "registry version") {
		t.Fatalf("err %v", err)
	}
}

type downCaller struct{}

func (downCaller) Query(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, context.DeadlineExceeded
}

func (downCaller) Call(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, context.DeadlineExceeded
}

// slowRegistry counts reads in flight.
type slowRegistry struct {
	Registry
	mu             sync.Mutex
	inFlight, peak int
}

func (s *slowRegistry) GetValue(ctx context.Context, key string, v uint64) ([]byte, uint64, bool, error) {
	s.mu.Lock()
	s.inFlight++
	s.peak = max(s.peak, s.inFlight)
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	defer func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }()
	return s.Registry.GetValue(ctx, key, v)
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

func TestEveryRecordIsReadAtTheRegistryVersionTheReportPrints(t *testing.T) {
	d, f, _ := startLive(t)
	reads := &versionsRead{Registry: f.Registry, seen: map[uint64]int{}}
	f.Registry = reads
	res := quick()
	r := Reconcile(res, fetch(t, f, res, state.New(), false))
	if v := d.Registry.Version(); r.RegistryVersion != v || len(reads.seen) != 1 || reads.seen[v] == 0 {
		t.Fatalf("report at %d, get_value versions %v", r.RegistryVersion, reads.seen)
	}
	if !strings.HasPrefix(text(r), fmt.Sprintf("registry version %d\n", r.RegistryVersion)) {
		t.Fatalf("the report does not open with its version:\n%s", text(r))
	}
}

func TestReadsRunConcurrentlyWithinTheBound(t *testing.T) {
	_, f, _ := startLive(t)
	slow := &slowRegistry{Registry: f.Registry}
	f.Registry, f.Parallel = slow, 3
	res := quick()
	for i := 0; i < 12; i++ { // more nodes than the bound
		id := pid("extra" + string(rune('a'+i)))
		res.Nodes = append(res.Nodes, &config.Node{Name: "x", ID: id, Operator: operatorID})
	}
	fetch(t, f, res, state.New(), false)
	if slow.peak > 3 || slow.peak < 2 {
		t.Fatalf("peak %d reads in flight, want 2..3", slow.peak)
	}
}

func TestASubnetOnlyNodeBlocksNameIsReadAndItsDeclaredMembersChecked(t *testing.T) {
	_, f, _ := startLive(t)
	res := quick()
	res.Subnets = nil              // nodes a and b still name subnetID
	res.Nodes[2].Subnet = subnetID // node c is in no subnet on the devnet
	r := Reconcile(res, fetch(t, f, res, state.New(), false))
	if !r.Ran() {
		t.Fatalf("failed reads: %v", r.FailedReads)
	}
	for name, want := range map[string]Status{"a": InSync, "b": InSync, "c": Missing} {
		id := map[string]string{"a": nodeA, "b": nodeB, "c": nodeC}[name]
		if row := rowOf(t, r, SectionSubnet, name, id); row.Status != want {
			t.Fatalf("node %s: %+v, want %s\n%s", name, row, want, text(r))
		}
	}
}

func TestNodesDeclaredUnassignedAreFoundInSubnetsNoBlockDeclares(t *testing.T) {
	_, f, _ := startLive(t)
	res := quick()
	res.Subnets = nil
	res.Nodes[0].Subnet, res.Nodes[1].Subnet = "", "" // a and b are members of subnetID on the devnet
	live := fetch(t, f, res, state.New(), false)
	if _, read := live.Subnets[subnetID]; !read || live.SubnetListErr != "" {
		t.Fatalf("subnet %s not read from the subnet list (%q)", subnetID, live.SubnetListErr)
	}
	r := Reconcile(res, live)
	for name, id := range map[string]string{"a": nodeA, "b": nodeB} {
		if row := rowOf(t, r, SectionSubnet, name, id); row.Status != WrongSubnet || row.Detail != "declared unassigned, a member of subnet "+subnetID {
			t.Fatalf("node %s: %+v\n%s", name, row, text(r))
		}
	}
}

// hungList is the devnet's dashboard whose list never comes: its read
// ends only when the fetch gives up on it, and says how it ended.
type hungList struct {
	*source.Dashboard
	ended chan error
}

func (d *hungList) Nodes(ctx context.Context) (map[string]source.DashboardNode, error) {
	<-ctx.Done()
	d.ended <- ctx.Err()
	return nil, ctx.Err()
}

// A dashboard whose list does not come holds the status reads only
// ListWait: the fetch gives up on it (cancelling the read, not waiting for
// its timeout) and reads each node alone, the unreachable one from the
// dashboard's record of it.
func TestAListThatDoesNotComeIsGivenUpOn(t *testing.T) {
	d, f, _ := startLive(t)
	hung := &hungList{Dashboard: source.NewDashboard(d.DashboardURL, nil), ended: make(chan error, 1)}
	f.Dashboard, f.ListWait = hung, 50*time.Millisecond
	live := fetch(t, f, declared(), state.New(), false)
	wantVersionSources(t, live)
	if err := <-hung.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the list's read ended with %v, want it cancelled by the fetch", err)
	}
}
