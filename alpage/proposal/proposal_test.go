package proposal

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func loadFixture(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Load("../config/testdata/fleet/proposals.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func build(t *testing.T, c *config.Config, name string) *Proposal {
	t.Helper()
	p, err := Build(c.Proposal(name))
	if err != nil {
		t.Fatalf("Build(%s): %v", name, err)
	}
	return p
}

func TestTheMembershipPayloadMatchesTheReferenceEncoderByteForByte(t *testing.T) {
	p, err := Build(&config.Proposal{Name: "m", Kind: config.KindMembership, Title: "t", Body: &kinds.Membership{
		SubnetID: "67htk-vfkxp-gn33q-baibq",
		Remove:   []kinds.NodeRef{{ID: "5ffj3-jarcq-lruhj-aemtc-sla"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	const want = "4449444c026d686c03ddd99b870300bd869d8b046888fe9fc80d000101000108aabbccddee01020301010a1114171a1d202326292c"
	if got := hex.EncodeToString(p.Payload); got != want {
		t.Fatalf("payload\n got %s\nwant %s", got, want)
	}
}

func TestEachKindRunsThePinnedNNSFunctionUnderItsTopic(t *testing.T) {
	c := loadFixture(t)
	cases := []struct {
		proposal string
		function int32
		topic    int32
	}{
		{"add-n2", 31, 7},
		{"upgrade-app1", 11, 12},
		{"halt-app1", 7, 7},
		{"drop-n3", 18, 5},
		{"drop-old-operator", 23, 5},
		{"drop-gone-provider", 0, 6},
	}
	for _, tc := range cases {
		p := build(t, c, tc.proposal)
		if int32(p.Function) != tc.function || int32(p.Topic) != tc.topic {
			t.Errorf("%s: function %d topic %d, want %d and %d", tc.proposal, p.Function, p.Topic, tc.function, tc.topic)
		}
		if tc.function != 0 && (p.Action.ExecuteNnsFunction == nil || p.Action.ExecuteNnsFunction.NnsFunction != tc.function || !bytes.Equal(p.Action.ExecuteNnsFunction.Payload, p.Payload)) {
			t.Errorf("%s: the action does not carry the function and payload", tc.proposal)
		}
	}
}

func TestPayloadsDecodeBackIntoTheCanisterTypes(t *testing.T) {
	c := loadFixture(t)

	var upd nns.UpdateSubnetPayload
	if err := candid.Unmarshal(build(t, c, "halt-app1").Payload, &upd); err != nil {
		t.Fatal(err)
	}
	if upd.IsHalted == nil || !*upd.IsHalted || upd.HaltAtCupHeight != nil || upd.SubnetType != nil {
		t.Errorf("update_subnet: declared fields must be set and omitted ones null: %+v", upd)
	}
	if upd.SSHReadonlyAccess == nil || len(*upd.SSHReadonlyAccess) != 0 {
		t.Error("update_subnet: ssh_readonly_access = [] must travel as opt vec {} (revoke all), not null")
	}
	if upd.Features == nil || upd.Features.SevEnabled == nil || !*upd.Features.SevEnabled {
		t.Errorf("update_subnet: features = %+v", upd.Features)
	}

	var dep nns.DeployGuestosToAllSubnetNodesPayload
	if err := candid.Unmarshal(build(t, c, "upgrade-app1").Payload, &dep); err != nil || dep.ReplicaVersionID != "2e921c9adfc71f3edc96a9eb5d85fc742e7d8a9f" {
		t.Errorf("deploy_guestos: %+v, %v", dep, err)
	}

	var rn nns.RemoveNodesPayload
	if err := candid.Unmarshal(build(t, c, "drop-n3").Payload, &rn); err != nil || len(rn.NodeIDs) != 1 || rn.NodeIDs[0].String() != "qoctq-giaaa-aaaaa-aaaea-cai" {
		t.Errorf("remove_nodes: %+v, %v", rn, err)
	}

	var ro nns.RemoveNodeOperatorsPayload
	if err := candid.Unmarshal(build(t, c, "drop-old-operator").Payload, &ro); err != nil || ro.NodeOperatorPrincipalsToRemove == nil || ro.NodeOperatorPrincipalsToRemove.Principals[0].String() != "rrkah-fqaaa-aaaaa-aaaaq-cai" {
		t.Errorf("remove_node_operators: %+v, %v", ro, err)
	}

	var rp nns.AddOrRemoveNodeProvider
	if err := candid.Unmarshal(build(t, c, "drop-gone-provider").Payload, &rp); err != nil || rp.Change == nil || rp.Change.ToRemove == nil || rp.Change.ToRemove.ID.String() != "2chl6-4hpzw-vqaaa-aaaaa-c" {
		t.Errorf("remove_node_provider: %+v, %v", rp, err)
	}
}

func TestTheSamePayloadAlwaysHashesTheSame(t *testing.T) {
	a := build(t, loadFixture(t), "add-n2")
	b := build(t, loadFixture(t), "add-n2")
	if a.PayloadSHA256 != b.PayloadSHA256 || len(a.PayloadSHA256) != 64 {
		t.Fatalf("hashes %s and %s", a.PayloadSHA256, b.PayloadSHA256)
	}
}

// The request is the one both the dry run and the submission send
// (governance's client wraps it in manage_neuron with the neuron).
func TestTheRequestCarriesTitleSummaryURLAndTheAction(t *testing.T) {
	p := build(t, loadFixture(t), "add-n2")
	p.URL, p.Summary = "https://forum.example/t/1", "Why."
	mp := p.Request()
	if *mp.Title != "Add n2 to app1" || mp.Action != p.Action || mp.URL != p.URL || mp.Summary != p.Summary {
		t.Fatalf("request = %+v", mp)
	}
	req := nns.ManageNeuronRequest{NeuronIDOrSubaccount: &nns.NeuronIDOrSubaccount{NeuronID: &nns.NeuronID{ID: 42}}, Command: &nns.ManageNeuronCommandRequest{MakeProposal: &mp}}
	if _, err := candid.Marshal(req); err != nil {
		t.Fatalf("manage_neuron request does not encode: %v", err)
	}
}

func TestRenderingsMatchTheGoldenFiles(t *testing.T) {
	c := loadFixture(t)
	for _, decl := range c.Proposals {
		p := build(t, c, decl.Name)
		var out bytes.Buffer
		p.Render(&out)
		golden := filepath.Join("testdata", decl.Name+".golden")
		if *update {
			os.WriteFile(golden, out.Bytes(), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s rendering changed:\n%s\nwant:\n%s", decl.Name, out.Bytes(), want)
		}
	}
}

func TestCompareTellsNotSubmittedInSyncDriftAndSettled(t *testing.T) {
	p := build(t, loadFixture(t), "add-n2")
	if s, _ := Compare(p, nil); s != NotSubmitted {
		t.Errorf("no record: %s", s)
	}
	if s, _ := Compare(p, &state.Proposal{PayloadSHA256: p.PayloadSHA256}); s != InSync {
		t.Errorf("same hash: %s", s)
	}
	for _, settled := range []state.Status{state.StatusExecuted, state.StatusRejected, state.StatusFailed} {
		if s, why := Compare(p, &state.Proposal{PayloadSHA256: "00", Status: settled}); s != Settled || why != "config has since changed; payload is immutable" {
			t.Errorf("changed after it was %s: %s (%s)", settled, s, why)
		}
	}
	if s, _ := Compare(p, &state.Proposal{PayloadSHA256: "00", Status: state.StatusAdopted}); s != Drift {
		t.Errorf("changed while adopted: %s", s)
	}
	if s, why := Compare(p, &state.Proposal{PayloadSHA256: "00", Status: state.StatusOpen}); s != Drift || why == "" {
		t.Errorf("changed while open: %s (%s)", s, why)
	}
	if s, why := Compare(p, &state.Proposal{Kind: "resize", PayloadSHA256: p.PayloadSHA256}); s != InSync {
		t.Errorf("recorded under the kind's name before v0.3.0: %s (%s)", s, why)
	}
}

func TestARecordOfAnotherKindWithTheSameHashIsDriftNamingTheProposalAndBothKinds(t *testing.T) {
	p := build(t, loadFixture(t), "add-n2")
	for _, status := range []state.Status{"", state.StatusOpen, state.StatusExecuted} {
		s, why := Compare(p, &state.Proposal{Kind: "remove_nodes", ProposalID: 9, PayloadSHA256: p.PayloadSHA256, Status: status})
		if s != Drift {
			t.Errorf("status %q: %s (%s), want drift", status, s, why)
		}
		for _, want := range []string{`proposal "add-n2"`, "kind remove_nodes", "declares membership", "restore it from git"} {
			if !strings.Contains(why, want) {
				t.Errorf("status %q: %q does not say %q", status, why, want)
			}
		}
	}
	if s, why := Compare(p, &state.Proposal{Kind: "remove_nodes", PayloadSHA256: "00", Status: state.StatusOpen}); s != Drift || !strings.Contains(why, `put kind = "remove_nodes" back`) {
		t.Errorf("kind and payload changed while open: %s (%s)", s, why)
	}
}
