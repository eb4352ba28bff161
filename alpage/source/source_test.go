package source

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func pid(tag string) principal.Principal { return principal.SelfAuthenticating([]byte(tag)) }

func explorerOver(t *testing.T, reg *registry.Registry) *Explorer {
	srv := httptest.NewServer(&devnet.Explorer{Registry: reg})
	t.Cleanup(srv.Close)
	return NewExplorer(srv.URL+"/", nil)
}

func TestTheExplorerTellsRegisteredNodesOwnedNodesAndElectedVersions(t *testing.T) {
	ctx := context.Background()
	reg := registry.New()
	reg.AddDataCenter(registry.DataCenter{ID: "zh1"})
	op, idle := pid("operator"), pid("idle")
	reg.AddNodeOperator(registry.NodeOperator{ID: op, Provider: pid("provider"), DataCenter: "zh1", NodeAllowance: 2})
	reg.AddNodeOperator(registry.NodeOperator{ID: idle, Provider: pid("provider"), DataCenter: "zh1"})
	node := pid("node")
	if _, err := reg.AddNode(registry.Node{ID: node, Operator: op, IPv6: "::1"}); err != nil {
		t.Fatal(err)
	}
	reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	reg.ElectVersion("v2", nns.ReplicaVersionRecordPB{})
	if err := reg.UnelectVersion("v2"); err != nil {
		t.Fatal(err)
	}
	e := explorerOver(t, reg)

	if ok, err := e.NodeRegistered(ctx, node.String()); err != nil || !ok {
		t.Errorf("registered node: %v %v", ok, err)
	}
	if ok, err := e.NodeRegistered(ctx, pid("stranger").String()); err != nil || ok {
		t.Errorf("unknown node: %v %v", ok, err)
	}
	if ids, err := e.OperatorNodes(ctx, op.String()); err != nil || len(ids) != 1 || ids[0] != node.String() {
		t.Errorf("operator nodes: %v %v", ids, err)
	}
	if ids, err := e.OperatorNodes(ctx, idle.String()); err != nil || len(ids) != 0 {
		t.Errorf("an operator without nodes: %v %v", ids, err)
	}
	for v, want := range map[string]bool{"v1": true, "v2": false, "v3": false} {
		if got, err := e.Elected(ctx, v); err != nil || got != want {
			t.Errorf("Elected(%s) = %v, %v; want %v", v, got, err, want)
		}
	}
}

func TestTheHighestVersionWinsWhateverTheOrder(t *testing.T) {
	h := []Mutation{{Version: 9, Value: []byte(`null`)}, {Version: 3, Value: []byte(`{}`)}}
	if m, ok := Latest(h); !ok || m.Version != 9 || !m.Deleted() {
		t.Fatalf("latest %+v", m)
	}
	if _, ok := Latest(nil); ok {
		t.Fatal("an empty history has a latest entry")
	}
}

func TestAnExplorerErrorIsAnErrorNotAnAbsence(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	}))
	defer srv.Close()
	if _, err := NewExplorer(srv.URL, nil).Elected(context.Background(), "v1"); err == nil {
		t.Fatal("a 502 read as not elected")
	}
}

func TestASlowServiceTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	d := NewDashboard(srv.URL, nil)
	d.c.timeout = 50 * time.Millisecond
	start := time.Now()
	if _, _, err := d.Proposal(context.Background(), 1); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestTheDashboardNamesEachElectedRelease(t *testing.T) {
	props := []devnet.DashboardProposal{
		{ID: 1, ProposalID: 1, Topic: "TOPIC_IC_OS_VERSION_ELECTION", Status: "EXECUTED",
			Summary: `Release Notes for [release-2026-10-16\_03-17-base](https://github.com/dfinity/ic/tree/x) (aaa)`,
			Payload: map[string]any{"replica_version_to_elect": "aaa"}},
		{ID: 2, ProposalID: 2, Topic: "TOPIC_IC_OS_VERSION_ELECTION", Status: "REJECTED",
			Summary: "Release Notes for [never]", Payload: map[string]any{"replica_version_to_elect": "bbb"}},
		{ID: 3, ProposalID: 3, Topic: "TOPIC_SUBNET_MANAGEMENT", Status: "EXECUTED"},
		{ID: 4, ProposalID: 4, Topic: "TOPIC_IC_OS_VERSION_ELECTION", Status: "EXECUTED",
			Summary: "no release notes here", Payload: map[string]any{"replica_version_to_elect": "ccc"}},
	}
	srv := httptest.NewServer(&devnet.Dashboard{Proposals: func() []devnet.DashboardProposal { return props }})
	defer srv.Close()
	d := NewDashboard(srv.URL, nil)
	got, err := d.Elections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Election{{VersionID: "aaa", Release: "release-2026-10-16_03-17-base", ProposalID: 1}, {VersionID: "ccc", ProposalID: 4}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("elections %+v, want %+v", got, want)
	}
	if p, ok, err := d.Proposal(context.Background(), 3); err != nil || !ok || p.Topic != "TOPIC_SUBNET_MANAGEMENT" {
		t.Fatalf("proposal 3: %+v %v %v", p, ok, err)
	}
	if _, ok, err := d.Proposal(context.Background(), 99); err != nil || ok {
		t.Fatalf("proposal 99: %v %v", ok, err)
	}
}

func TestURLPrefersTheFlagThenTheEnvironment(t *testing.T) {
	t.Setenv(ExplorerURLEnv, "http://env/")
	if got := URL("http://flag/", ExplorerURLEnv, MainnetExplorerURL); got != "http://flag" {
		t.Errorf("flag: %s", got)
	}
	if got := URL("", ExplorerURLEnv, MainnetExplorerURL); got != "http://env" {
		t.Errorf("env: %s", got)
	}
	t.Setenv(ExplorerURLEnv, "")
	if got := URL("", ExplorerURLEnv, MainnetExplorerURL); got != MainnetExplorerURL {
		t.Errorf("default: %s", got)
	}
}

func TestADashboardNumberIsReadInEveryFormTheDashboardWrites(t *testing.T) {
	cases := map[string]uint64{`12`: 12, `"4242"`: 4242, `4.5e16`: 45e15, `null`: 0, `""`: 0, `"12838523358913392196"`: 12838523358913392196}
	for in, want := range cases {
		var n Number
		if err := json.Unmarshal([]byte(in), &n); err != nil || uint64(n) != want {
			t.Errorf("%s read as %d (%v), want %d", in, n, err, want)
		}
	}
	for _, in := range []string{`-1`, `"twelve"`, `1e30`, `true`} {
		var n Number
		if err := json.Unmarshal([]byte(in), &n); err == nil {
			t.Errorf("%s was accepted as %d", in, n)
		}
	}
}
