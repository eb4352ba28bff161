package nns

import (
	"encoding/hex"
	"reflect"
	"testing"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/candid/idl"
	"alpnib.dev/ic/principal"
)

// The known answer from the spec (payload bytes the reference tool pinned in
// existing state.json files).
func TestTheMembershipPayloadEncodesToTheReferenceBytes(t *testing.T) {
	p := ChangeSubnetMembershipPayload{
		SubnetID:      principal.MustDecode("67htk-vfkxp-gn33q-baibq"),
		NodeIDsRemove: []principal.Principal{principal.MustDecode("5ffj3-jarcq-lruhj-aemtc-sla")},
	}
	b, err := candid.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = "4449444c026d686c03ddd99b870300bd869d8b046888fe9fc80d000101000108aabbccddee01020301010a1114171a1d202326292c"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Every type here must have a Candid mapping; a bad tag or an unmarked
// variant would only show up when a request is made.
func TestEveryDidTypeHasACandidMapping(t *testing.T) {
	for _, v := range []any{
		ChangeSubnetMembershipPayload{}, DeployGuestosToAllSubnetNodesPayload{}, UpdateSubnetPayload{},
		RemoveNodesPayload{}, RemoveNodeOperatorsPayload{}, GetSubnetRequest{}, GetSubnetResponse{},
		GetNodeOperatorsAndDcsOfNodeProviderResponse{}, ManageNeuronRequest{}, ManageNeuronResponse{},
		ProposalInfo{}, GetFullNeuronResponse{}, ListNodeProvidersResponse{}, ListProposalInfo{},
		ListProposalInfoResponse{}, AddNodeOperatorPayload{}, UpdateNodeOperatorConfigPayload{}, DeployHostosToSomeNodesPayload{},
	} {
		if _, err := candid.TypeOf(reflect.TypeOf(v)); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
}

// TestThePayloadTypesMatchTheRegistryDid checks each Go payload type
// against the registry.did argument it is sent as (testdata holds those
// declarations): an opt where the canister wants a plain value, a missing
// field or a wrong integer size fails here rather than on mainnet.
func TestThePayloadTypesMatchTheRegistryDid(t *testing.T) {
	prog, err := idl.ParseFile("testdata/registry_payloads.did")
	if err != nil {
		t.Fatal(err)
	}
	typeOf := func(v any) *candid.Type {
		ct, err := candid.TypeOf(reflect.TypeOf(v))
		if err != nil {
			t.Fatal(err)
		}
		return ct
	}
	for method, arg := range map[string]any{
		"change_subnet_membership":           ChangeSubnetMembershipPayload{},
		"deploy_guestos_to_all_subnet_nodes": DeployGuestosToAllSubnetNodesPayload{},
		"remove_nodes":                       RemoveNodesPayload{},
		"remove_node_operators":              RemoveNodeOperatorsPayload{},
		"update_subnet":                      UpdateSubnetPayload{},
		"add_node_operator":                  AddNodeOperatorPayload{},
		"update_node_operator_config":        UpdateNodeOperatorConfigPayload{},
		"deploy_hostos_to_some_nodes":        DeployHostosToSomeNodesPayload{},
	} {
		if err := prog.CheckMethod(method, []*candid.Type{typeOf(arg)}, nil); err != nil {
			t.Errorf("%T: %v", arg, err)
		}
	}
	if err := prog.CheckMethod("get_subnet", []*candid.Type{typeOf(GetSubnetRequest{})}, []*candid.Type{typeOf(GetSubnetResponse{})}); err != nil {
		t.Error(err)
	}
	err = prog.CheckMethod("get_node_operators_and_dcs_of_node_provider",
		[]*candid.Type{candid.Principal()}, []*candid.Type{typeOf(GetNodeOperatorsAndDcsOfNodeProviderResponse{})})
	if err != nil {
		t.Error(err)
	}
}

func TestSubnetTypeRecordEnumAndVariantCasesMapBothWays(t *testing.T) {
	want := map[int32]string{
		SubnetTypeApplication:         "application",
		SubnetTypeSystem:              "system",
		SubnetTypeVerifiedApplication: "verified_application",
		SubnetTypeCloudEngine:         "cloud_engine",
	}
	for code, name := range want {
		st, ok := SubnetTypeOfRecord(code)
		if !ok || st.Name() != name {
			t.Errorf("record subnet type %d reads as %q (%v), want %q", code, st.Name(), ok, name)
		}
		if back, ok := st.Record(); !ok || back != code {
			t.Errorf("case %q goes back to record subnet type %d (%v), want %d", name, back, ok, code)
		}
	}
	for _, code := range []int32{SubnetTypeUnspecified, 3, 6} {
		if st, ok := SubnetTypeOfRecord(code); ok {
			t.Errorf("record subnet type %d reads as case %q, want none", code, st.Name())
		}
	}
	if code, ok := (SubnetType{}).Record(); ok {
		t.Errorf("a variant with no case set has record subnet type %d", code)
	}
}
