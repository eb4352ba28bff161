package kinds_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// The principals of the spec's known answer (67htk… is aabbccddee010203,
// 5ffj3… is 1114171a1d202326292c).
const (
	knownA = "67htk-vfkxp-gn33q-baibq"
	knownB = "5ffj3-jarcq-lruhj-aemtc-sla"
	hostos = "68e6e2b4e4a1fb7c0c0e8f3b0a4c2d6e1f9a8b7c"
)

// loadProposal loads one proposal block of kind and body, named "p".
func loadProposal(t *testing.T, kind, body string) *config.Proposal {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proposals.hcl")
	text := "proposal \"p\" {\n  kind  = \"" + kind + "\"\n  title = \"A proposal\"\n  " + kind + " {\n" + body + "  }\n}\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("load:\n%s\n%v", text, err)
	}
	return cfg.Proposal("p")
}

func build(t *testing.T, kind, body string) *proposal.Proposal {
	t.Helper()
	p, err := proposal.Build(loadProposal(t, kind, body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The reference encodings were computed outside this project's codec, by
// a throw-away encoder written from the Candid spec and the spec's
// byte-compatibility rules (post-order type table, shared entries, fields
// by hash), which reproduces the spec's membership known answer; the
// values are those ic-admin puts in each payload for the same flags
// (docs/decisions.md, alpage/kinds).
func TestTheOperatorAndHostOSPayloadsEncodeToTheirReferenceBytes(t *testing.T) {
	for _, c := range []struct {
		kind, body string
		fn         nns.NnsFunction
		topic      nns.Topic
		want       string
	}{
		{"add_node_operator", `    node_operator_id = "` + knownA + `"
    node_provider_id = "` + knownB + `"
    dc_id            = "ZH1"
    node_allowance   = 3
    rewardable_nodes = { "type3.1" = 4, "type1.1" = 2 }
    max_rewardable_nodes = { "type3.1" = 5 }
    ipv6             = "2001:db8:0:0:0:0:0:1"
`, nns.FunctionAssignNoid, nns.TopicNodeAdmin,
			"4449444c066e716c02007101796d016e026e686c07a795f3ad0400f6c78e8808038af3a2b108049bf499bd0878bbf187b70c02dddfde9b0d04dba7aaae0d7101050114323030313a6462383a303a303a303a303a303a3101010774797065332e3105000000010108aabbccddee0102030300000000000000020774797065312e31020000000774797065332e310400000001010a1114171a1d202326292c037a6831"},
		{"update_node_operator_config", `    node_operator_id = "` + knownA + `"
    node_allowance   = 7
`, nns.FunctionUpdateNodeOperatorConfig, nns.TopicNodeAdmin,
			"4449444c086e686e7e6e716c02007101796d036e046e786c08d9cfeb8a0300e190f6a00401a795f3ad0402ec90e9cf0700f6c78e8808059bf499bd0806bbf187b70c04dba7aaae0d020107010108aabbccddee010203000000000107000000000000000000"},
		{"deploy_hostos", `    hostos_version_id = "` + hostos + `"
    node {
      id = "` + knownA + `"
    }
    node {
      id = "` + knownB + `"
    }
`, nns.FunctionDeployHostosToSomeNodes, nns.TopicIcOsVersionDeployment,
			"4449444c036e716d686c02f5dff8f40700bbf8fded0f010102012836386536653262346534613166623763306330653866336230613463326436653166396138623763020108aabbccddee010203010a1114171a1d202326292c"},
	} {
		p := build(t, c.kind, c.body)
		if got := hex.EncodeToString(p.Payload); got != c.want {
			t.Errorf("%s payload\n got  %s\n want %s", c.kind, got, c.want)
		}
		if p.Function != c.fn || p.Topic != c.topic || p.Action.ExecuteNnsFunction == nil || nns.NnsFunction(p.Action.ExecuteNnsFunction.NnsFunction) != c.fn {
			t.Errorf("%s: function %s, topic %s, action %+v", c.kind, p.Function, p.Topic, p.Action)
		}
		if k := kinds.Claimant(p.Action); k == nil || k.Name() != c.kind {
			t.Errorf("%s's action is claimed by %v, not by its own kind alone", c.kind, k)
		}
	}
}

// setOperator writes an operator record with every field set.
func setOperator(t *testing.T, r *registry.Registry, op, provider principal.Principal) {
	t.Helper()
	ip := "2001:db8:0:0:0:0:0:1"
	rec := nns.NodeOperatorRecordPB{NodeOperatorPrincipalID: op.Bytes(), NodeAllowance: 1, NodeProviderPrincipalID: provider.Bytes(),
		DcID: "zh1", RewardableNodes: map[string]uint32{"type1.1": 2, "type3.1": 4}, IPv6: &ip}
	r.Apply([]registry.Mutation{{Key: nns.NodeOperatorRecordKey(op.String()), Value: rec.Marshal()}})
}

func operatorRecord(t *testing.T, r *registry.Registry, op principal.Principal) nns.NodeOperatorRecordPB {
	t.Helper()
	rec, ok, err := r.NodeOperator(op)
	if err != nil || !ok {
		t.Fatalf("operator %s: %v %v", op, ok, err)
	}
	return rec
}

// An update names what changes and nothing else: executed by the local
// registry (which applies update_node_operator_config as the canister
// does), the operator keeps every field the block leaves out, and a named
// map replaces the record's whole.
func TestAnOperatorUpdateChangesWhatItNamesAndTheOperatorKeepsTheRest(t *testing.T) {
	op, provider := principal.MustDecode(knownA), principal.MustDecode(knownB)
	reg := registry.New()
	setOperator(t, reg, op, provider)
	exec := localnet.RegistryExecutor(reg)
	run := func(body string) {
		t.Helper()
		p := build(t, "update_node_operator_config", "    node_operator_id = \""+knownA+"\"\n"+body)
		var pl nns.UpdateNodeOperatorConfigPayload
		if err := candid.Unmarshal(p.Payload, &pl); err != nil {
			t.Fatal(err)
		}
		if err := exec.ExecuteNnsFunction(p.Function, p.Payload); err != nil {
			t.Fatalf("execute %s: %v", body, err)
		}
	}

	run("    node_allowance = 5\n")
	rec := operatorRecord(t, reg, op)
	if rec.NodeAllowance != 5 || rec.DcID != "zh1" || rec.IPv6 == nil || *rec.IPv6 != "2001:db8:0:0:0:0:0:1" ||
		len(rec.RewardableNodes) != 2 || rec.RewardableNodes["type3.1"] != 4 || string(rec.NodeProviderPrincipalID) != string(provider.Bytes()) {
		t.Fatalf("after naming node_allowance only, the record is %+v", rec)
	}

	run("    rewardable_nodes = { \"type3.1\" = 6 }\n")
	rec = operatorRecord(t, reg, op)
	if rec.NodeAllowance != 5 || len(rec.RewardableNodes) != 1 || rec.RewardableNodes["type3.1"] != 6 || rec.DcID != "zh1" {
		t.Fatalf("after naming rewardable_nodes, the record is %+v (the map is replaced whole, the rest kept)", rec)
	}

	run("    dc_id = \"FR1\"\n    ipv6 = \"2001:db8:0:0:0:0:0:2\"\n")
	rec = operatorRecord(t, reg, op)
	if rec.DcID != "fr1" || *rec.IPv6 != "2001:db8:0:0:0:0:0:2" || rec.NodeAllowance != 5 || rec.RewardableNodes["type3.1"] != 6 {
		t.Fatalf("after naming dc_id and ipv6, the record is %+v", rec)
	}
}

// What the registry would refuse, the loader or preflight refuses first.
func TestPreflightRefusesWhatTheRegistryOrGovernanceWouldRefuse(t *testing.T) {
	refused := func(checks []kinds.Check, want string) bool {
		for _, c := range checks {
			if c.Severity == kinds.Refused && strings.Contains(c.Message, want) {
				return true
			}
		}
		return false
	}
	add := loadProposal(t, "add_node_operator", "    node_operator_id = \""+knownA+"\"\n    node_provider_id = \""+knownB+"\"\n    dc_id = \"zh1\"\n")
	k := kinds.Of("add_node_operator")
	if checks, _ := k.Check(add.Body, kinds.AddNodeOperatorFacts{Provider: kinds.ProviderFacts{Known: false}, DataCenter: true}, kinds.Options{}); !refused(checks, "does not know node provider") {
		t.Errorf("an unknown provider is not refused: %+v", checks)
	}
	if checks, _ := k.Check(add.Body, kinds.AddNodeOperatorFacts{Operator: kinds.OperatorFacts{Registered: true}, Provider: kinds.ProviderFacts{Known: true}, DataCenter: true}, kinds.Options{}); !refused(checks, "has a record already") {
		t.Errorf("an operator with a record is not refused: %+v", checks)
	}
	if checks, _ := k.Check(add.Body, kinds.AddNodeOperatorFacts{Provider: kinds.ProviderFacts{Known: true}, DataCenter: true}, kinds.Options{}); refused(checks, "") {
		t.Errorf("a new operator under a known provider is refused: %+v", checks)
	}

	upd := loadProposal(t, "update_node_operator_config", "    node_operator_id = \""+knownA+"\"\n    node_allowance = 1\n")
	k = kinds.Of("update_node_operator_config")
	if checks, _ := k.Check(upd.Body, kinds.UpdateNodeOperatorConfigFacts{}, kinds.Options{}); !refused(checks, "has no record") {
		t.Errorf("an operator with no record is not refused: %+v", checks)
	}
	rec := &nns.NodeOperatorRecordPB{NodeAllowance: 4, RewardableNodes: map[string]uint32{"type1": 1}}
	checks, noop := k.Check(upd.Body, kinds.UpdateNodeOperatorConfigFacts{Operator: kinds.OperatorFacts{Registered: true, Record: rec, Nodes: []string{"n1", "n2"}}}, kinds.Options{})
	var noted, kept bool
	for _, c := range checks {
		noted = noted || (c.Severity == kinds.Note && c.Field == "node_allowance" && strings.Contains(c.Message, "may still add"))
		kept = kept || strings.Contains(c.Message, "rewardable_nodes, dc_id, node_provider_id, ipv6: not named")
	}
	if noop || !noted || !kept || refused(checks, "") {
		t.Errorf("an allowance of 1 for an operator with 2 nodes (legal: it is what the operator may still add): noop %v, noted %v, kept said %v: %+v", noop, noted, kept, checks)
	}

	hostOS := loadProposal(t, "deploy_hostos", "    hostos_version_id = \""+hostos+"\"\n    node {\n      id = \""+knownA+"\"\n    }\n")
	k = kinds.Of("deploy_hostos")
	if checks, _ := k.Check(hostOS.Body, kinds.DeployHostOSFacts{Elected: true, Nodes: map[string]kinds.NodeFacts{knownA: {}}}, kinds.Options{}); !refused(checks, "is not registered") {
		t.Errorf("an unregistered node is not refused: %+v", checks)
	}
	if checks, _ := k.Check(hostOS.Body, kinds.DeployHostOSFacts{Nodes: map[string]kinds.NodeFacts{knownA: {Registered: true}}}, kinds.Options{}); !refused(checks, "is not elected") {
		t.Errorf("an unelected version is not refused: %+v", checks)
	}
	if _, noop := k.Check(hostOS.Body, kinds.DeployHostOSFacts{Elected: true, Nodes: map[string]kinds.NodeFacts{knownA: {Registered: true, HostOS: hostos}}}, kinds.Options{}); !noop {
		t.Error("a node on the version already is not a no-op")
	}
}

// The loader refuses what the registry refuses and an empty map, which
// the registry ignores, at the attribute that says it.
func TestTheLoaderRefusesAnUpdateThatCouldNotDoWhatItSays(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"    node_operator_id = \"" + knownA + "\"\n", "Nothing to change"},
		{"    node_operator_id = \"" + knownA + "\"\n    rewardable_nodes = {}\n", "An empty map changes nothing"},
		{"    node_operator_id = \"" + knownA + "\"\n    ipv6 = \"2001:db8::1\"\n", "IPv6 address not in the registry's format"},
		{"    node_operator_id = \"" + knownA + "\"\n    node_provider_id = \"" + knownA + "\"\n", "Operator is its own provider"},
	} {
		path := filepath.Join(t.TempDir(), "proposals.hcl")
		text := "proposal \"p\" {\n  kind  = \"update_node_operator_config\"\n  title = \"A proposal\"\n  update_node_operator_config {\n" + c.body + "  }\n}\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
}

// deploy_hostos on the local registry: the nodes' records name the
// version, and an unelected version or an unregistered node fails the
// whole proposal, as the canister does.
func TestDeployHostOSSetsTheVersionOnTheNodeRecords(t *testing.T) {
	op, provider := principal.MustDecode(knownA), principal.MustDecode(knownB)
	reg := registry.New()
	setOperator(t, reg, op, provider)
	node := principal.SelfAuthenticating([]byte("node one"))
	if _, err := reg.AddNode(registry.Node{ID: node, Operator: op, IPv6: "::1"}); err != nil {
		t.Fatal(err)
	}
	exec := localnet.RegistryExecutor(reg)
	p := build(t, "deploy_hostos", "    hostos_version_id = \""+hostos+"\"\n    node {\n      id = \""+node.String()+"\"\n    }\n")
	if err := exec.ExecuteNnsFunction(p.Function, p.Payload); err == nil || !strings.Contains(err.Error(), "Could not find HostOS version: "+hostos) {
		t.Fatalf("an unelected version: %v", err)
	}
	reg.Apply([]registry.Mutation{{Key: nns.HostosVersionRecordKey(hostos), Value: []byte{}}})
	if err := exec.ExecuteNnsFunction(p.Function, p.Payload); err != nil {
		t.Fatal(err)
	}
	raw, _, _ := reg.Get(nns.NodeRecordKey(node.String()))
	var rec nns.NodeRecordPB
	if err := rec.Unmarshal(raw); err != nil || rec.HostosVersionID == nil || *rec.HostosVersionID != hostos {
		t.Fatalf("the node record after the deployment: %+v (%v)", rec, err)
	}
	gone := build(t, "deploy_hostos", "    hostos_version_id = \""+hostos+"\"\n    node {\n      id = \""+knownB+"\"\n    }\n")
	if err := exec.ExecuteNnsFunction(gone.Function, gone.Payload); err == nil || !strings.Contains(err.Error(), "not found in the registry") {
		t.Fatalf("an unregistered node: %v", err)
	}
}

// --generate from drift: an operator missing on-chain is added with what
// its block declares, one whose record differs gets an update naming the
// differing fields only, nodes off their HostOS get one deploy_hostos per
// version (an unelected one is a note), and what is pending is not
// proposed again.
func TestTheNewKindsGenerateFromDriftGroupedAndNotTwice(t *testing.T) {
	five, two := uint64(5), uint64(2)
	ip := "2001:db8:0:0:0:0:0:1"
	fleet := kinds.Fleet{
		Operators: []kinds.FleetOperator{
			{ID: "op-live", Name: "live", Provider: "np", DC: "zh1", NodeAllowance: &five, IPv6: &ip},
			{ID: "op-new", Name: "new", Provider: "np", DC: "zh1", NodeAllowance: &two, RewardableNodes: map[string]uint32{"type3.1": 1}},
		},
		HostOSVersions: []kinds.FleetVersion{{ID: "h1", Name: "one"}, {ID: "h2", Name: "two"}, {ID: "h3", Name: "three"}},
	}
	chain := kinds.Chain{
		Operators: map[string]kinds.ChainOperator{
			"op-live": {Found: true, Provider: "np", DC: "zh1", NodeAllowance: 1, IPv6: &ip, RewardableNodes: map[string]uint32{"type1": 3}},
			"op-new":  {},
		},
		Nodes:         map[string]kinds.ChainNode{},
		HostOSElected: map[string]bool{"h1": true, "h2": true, "h3": false},
	}
	for i, v := range []string{"h1", "h1", "h2", "h2", "h2", "h3"} {
		id := fmt.Sprintf("n%d", i)
		fleet.Nodes = append(fleet.Nodes, kinds.FleetNode{ID: id, Name: id, HostOS: v})
		chain.Nodes[id] = kinds.ChainNode{Found: true, HostOS: "h0"}
	}
	chain.Nodes["n1"] = kinds.ChainNode{Found: true, HostOS: "h1"} // on it already

	gen := func(name string, pending []kinds.Change) ([]kinds.Generated, []string) {
		return kinds.Of(name).Generate(kinds.NewDrift(fleet, chain, pending))
	}
	add, _ := gen("add_node_operator", nil)
	if len(add) != 1 {
		t.Fatalf("add_node_operator generated %+v", add)
	}
	if b := add[0].Body.(*kinds.AddNodeOperator); b.NodeOperatorID != "op-new" || b.NodeAllowance != 2 || b.RewardableNodes["type3.1"] != 1 || b.DcID != "zh1" {
		t.Errorf("the addition %+v", b)
	}
	upd, _ := gen("update_node_operator_config", nil)
	if len(upd) != 1 {
		t.Fatalf("update_node_operator_config generated %+v", upd)
	}
	if b := upd[0].Body.(*kinds.UpdateNodeOperatorConfig); b.NodeOperatorID != "op-live" || b.NodeAllowance == nil || *b.NodeAllowance != 5 ||
		b.RewardableNodes != nil || b.DcID != nil || b.IPv6 != nil || b.NodeProviderID != nil {
		t.Errorf("the update names more or less than the allowance: %+v", b)
	}
	hostos, notes := gen("deploy_hostos", nil)
	if len(hostos) != 2 || len(notes) != 1 || !strings.Contains(notes[0], "HostOS version three: 1 node(s)") {
		t.Fatalf("deploy_hostos generated %+v, notes %v", hostos, notes)
	}
	for i, want := range []struct {
		version string
		nodes   []string
	}{{"h1", []string{"n0"}}, {"h2", []string{"n2", "n3", "n4"}}} {
		b := hostos[i].Body.(*kinds.DeployHostOS)
		var ids []string
		for _, n := range b.Nodes {
			ids = append(ids, n.ID)
		}
		if b.HostOSVersionID != want.version || strings.Join(ids, ",") != strings.Join(want.nodes, ",") {
			t.Errorf("deploy_hostos %d: %s to %v, want %s to %v", i, b.HostOSVersionID, ids, want.version, want.nodes)
		}
	}

	var pending []kinds.Change
	for _, g := range append(append(add, upd...), hostos...) {
		pending = append(pending, g.Body.Closes()...)
	}
	for _, name := range []string{"add_node_operator", "update_node_operator_config", "deploy_hostos"} {
		if again, _ := gen(name, pending); len(again) != 0 {
			t.Errorf("%s generates again what is pending: %+v", name, again)
		}
	}
}
