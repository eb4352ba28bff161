package devnet

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// TestAProposalThroughTheDevnetShowsUpEverywhere uses only what the devnet
// prints (host, identity, neuron): the identity proposes with its neuron
// over the IC HTTP interface, and the change is visible on the registry
// canister, the explorer and the dashboard.
func TestAProposalThroughTheDevnetShowsUpEverywhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(ctx, Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	env := map[string]string{}
	for _, e := range d.Env() {
		env[e.Name] = e.Value
	}
	pem, err := os.ReadFile(env["ALP_IDENTITY"])
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.FromPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{URL: env["ALP_HOST"], Identity: id, FetchRootKey: env["ALP_FETCH_ROOT_KEY"] == "true"})
	if err != nil {
		t.Fatal(err)
	}
	g, r := nns.GovernanceClient{Caller: a}, nns.RegistryClient{Caller: a}
	if _, err := g.GetFullNeuron(ctx, 4242); err != nil {
		t.Fatalf("the printed identity cannot read the printed neuron: %v", err)
	}
	subnet := principal.MustDecode(f.Subnets[0].ID)
	free := principal.MustDecode("lea5s-hn4vi-mj74k-uhunx-sj3ct-s3hrh-xra7u-mc7bo-apknn-bryyv-pae") // node-08, unassigned
	payload, err := candid.Marshal(nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsAdd: []principal.Principal{free}, NodeIDsRemove: []principal.Principal{}})
	if err != nil {
		t.Fatal(err)
	}
	title := "Add node-08 to the subnet"
	pid, err := g.MakeProposal(ctx, 4242, nns.MakeProposalRequest{Title: &title, Summary: "devnet test",
		Action: &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(nns.FunctionChangeSubnetMembership), Payload: payload}}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := g.GetProposalInfo(ctx, pid)
	if err != nil || nns.ProposalStatus(info.Status) != nns.StatusExecuted {
		t.Fatalf("proposal %d: %v %+v", pid, err, info)
	}
	rec, err := r.GetSubnet(ctx, subnet)
	if err != nil || len(rec.Membership) != 8 {
		t.Fatalf("membership after the proposal: %v %d", err, len(rec.Membership))
	}
	resp, err := http.Get(env["ALP_DASHBOARD_URL"] + "/api/v3/proposals/" + jsonNumber(pid))
	if err != nil {
		t.Fatal(err)
	}
	var dp DashboardProposal
	if err := json.NewDecoder(resp.Body).Decode(&dp); err != nil || dp.Status != "EXECUTED" || dp.Topic != "TOPIC_SUBNET_MANAGEMENT" || dp.Title != title {
		t.Fatalf("dashboard: %v %+v", err, dp)
	}
	if p, ok := dp.Payload.(map[string]any); !ok || p["subnet_id"] != subnet.String() || len(p["node_ids_add"].([]any)) != 1 || p["node_ids_add"].([]any)[0] != free.String() {
		t.Fatalf("dashboard payload: %#v", dp.Payload)
	}
	resp.Body.Close()
	resp, err = http.Get(env["ALP_EXPLORER_URL"] + "/api/records/subnet_record_" + subnet.String())
	if err != nil {
		t.Fatal(err)
	}
	var hist []struct {
		Value struct {
			Membership []string `json:"membership"`
		} `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&hist); err != nil || len(hist) != 2 || !strings.Contains(strings.Join(hist[1].Value.Membership, ","), free.String()) {
		t.Fatalf("explorer history of the subnet: %v %+v", err, hist)
	}
	resp.Body.Close()
}

func TestAPurgedProposalIsOnlyOnTheDashboardAndNewIdsFollowIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, a := startWithAgent(ctx, t, f)
	g := nns.GovernanceClient{Caller: a}
	if info, err := g.GetProposalInfo(ctx, 120); err != nil || info != nil {
		t.Fatalf("governance still has proposal 120: %v %+v", err, info)
	}
	resp, err := http.Get(d.DashboardURL + "/api/v3/proposals/120")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dp DashboardProposal
	if err := json.NewDecoder(resp.Body).Decode(&dp); err != nil || dp.Status != "EXECUTED" || dp.ExecutedTimestampSeconds == 0 || dp.Topic != "TOPIC_SUBNET_MANAGEMENT" {
		t.Fatalf("dashboard: %v %+v", err, dp)
	}
	// the seeded election proposals are numbered after the purged one
	all, err := g.ListProposals(ctx, nns.ListProposalInfo{Limit: 100})
	if err != nil || len(all) == 0 || all[len(all)-1].ID.ID != 121 {
		t.Fatalf("ids after the purged proposal: %v %d", err, len(all))
	}
}

func TestWithAVotingPeriodTheDevnetDecidesProposalsWhenItEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(ctx, Options{Fleet: f, Dir: t.TempDir(), VotingPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pem, _ := os.ReadFile(d.IdentityPath)
	id, err := identity.FromPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := agent.New(agent.Config{URL: d.ICURL, Identity: id, FetchRootKey: true})
	g := nns.GovernanceClient{Caller: a}
	title := "A motion that waits"
	pid, err := g.MakeProposal(ctx, 4242, nns.MakeProposalRequest{Title: &title, Action: &nns.ProposalActionRequest{Motion: &nns.Motion{MotionText: "wait"}}})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := g.GetProposalInfo(ctx, pid); nns.ProposalStatus(info.Status) != nns.StatusOpen {
		t.Fatalf("just made: %s", nns.ProposalStatus(info.Status))
	}
	for {
		info, err := g.GetProposalInfo(ctx, pid)
		if err != nil {
			t.Fatal(err)
		}
		if nns.ProposalStatus(info.Status) == nns.StatusExecuted {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("still %s", nns.ProposalStatus(info.Status))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
