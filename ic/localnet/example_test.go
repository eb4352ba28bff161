package localnet_test

import (
	"fmt"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// A dry run in process: seed a registry with the live records a proposal
// touches (here written directly; alp would copy the protobuf values it read
// with get_value), execute the proposal through governance exactly as the
// NNS would, and read the outcome back.
func Example_dryRun() {
	subnet, member := principal.SelfAuthenticating([]byte("subnet")), principal.SelfAuthenticating([]byte("member"))
	sev := false
	live := nns.SubnetRecordPB{ReplicaVersionID: "v1", SubnetType: nns.SubnetTypeApplication,
		Membership: [][]byte{member.Bytes()}, Features: &nns.SubnetFeaturesRecord{SevEnabled: &sev}}
	reg := registry.New()
	reg.Apply([]registry.Mutation{{Key: nns.SubnetRecordKey(subnet.String()), Value: live.Marshal()}})

	me := principal.SelfAuthenticating([]byte("proposer"))
	gov := governance.New(governance.Config{}, localnet.RegistryExecutor(reg))
	gov.AddNeuron(governance.Neuron{ID: 1, Controller: me, StakeE8s: 1})

	on := true
	payload, _ := candid.Marshal(nns.UpdateSubnetPayload{SubnetID: subnet, Features: &nns.SubnetFeatures{SevEnabled: &on}})
	title := "Turn SEV on"
	id, gerr := gov.MakeProposal(me, 1, nns.MakeProposalRequest{Title: &title, Action: &nns.ProposalActionRequest{
		ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(nns.FunctionUpdateConfigOfSubnet), Payload: payload}}})
	if gerr != nil {
		fmt.Println(gerr)
		return
	}
	info := gov.ProposalInfo(id)
	fmt.Println(nns.ProposalStatus(info.Status).Word())
	fmt.Println(info.FailureReason.ErrorMessage)
	// Output:
	// FAILED
	// Error executing ExecuteNnsFunction proposal. Error Code: 5. Rejection message: registry invariant: Proposal attempts to change sev_enabled for Subnet 'qopdd-kjvwo-f6eby-sbal7-x5ji7-hgk2s-v6iw6-muznp-hxe74-v6wsa-kqe' from false to true, but sev_enabled can only be set during subnet creation.
}
