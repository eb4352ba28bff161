package nns

import (
	"context"
	"fmt"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

// Caller is what the typed clients need from an IC agent; *agent.Agent
// satisfies it. Query and Call take and return Candid (or, for get_value,
// protobuf) bytes.
type Caller interface {
	Query(ctx context.Context, canister principal.Principal, method string, arg []byte) ([]byte, error)
	Call(ctx context.Context, canister principal.Principal, method string, arg []byte) ([]byte, error)
}

var (
	registryID   = principal.MustDecode(RegistryCanisterID)
	governanceID = principal.MustDecode(GovernanceCanisterID)
)

// query calls method with the Candid encoding of args and decodes the reply
// into R. Its errors say which step failed; the caller names the method and
// its argument.
func query[R any](ctx context.Context, c Caller, canister principal.Principal, method string, args ...any) (R, error) {
	var out R
	arg, err := candid.Marshal(args...)
	if err != nil {
		return out, fmt.Errorf("encode argument: %w", err)
	}
	raw, err := c.Query(ctx, canister, method, arg)
	if err != nil {
		return out, err
	}
	if err := candid.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("decode reply: %w", err)
	}
	return out, nil
}

// RegistryClient calls the registry canister. Version pins every read to
// one registry version (0: the latest at each call); At gives a pinned copy,
// so the records of one report all come from the same version.
type RegistryClient struct {
	Caller  Caller
	Version uint64
}

// GetSubnet reads a subnet's record (get_subnet). get_subnet answers at the
// latest version only, so a client pinned by At reads subnet_record_<id> at
// its version instead and renders it as get_subnet would.
func (r RegistryClient) GetSubnet(ctx context.Context, subnet principal.Principal) (*SubnetRecord, error) {
	if r.Version != 0 {
		rec, ok, err := r.SubnetRecord(ctx, subnet)
		if err != nil {
			return nil, fmt.Errorf("get_subnet %s at version %d: %w", subnet, r.Version, err)
		}
		if !ok {
			return nil, fmt.Errorf("get_subnet %s at version %d: registry: Subnet %s not found in the Registry", subnet, r.Version, subnet)
		}
		out := rec.Candid()
		return &out, nil
	}
	resp, err := query[GetSubnetResponse](ctx, r.Caller, registryID, "get_subnet", GetSubnetRequest{SubnetID: &subnet})
	if err != nil {
		return nil, fmt.Errorf("get_subnet %s: %w", subnet, err)
	}
	if resp.Err != nil {
		return nil, fmt.Errorf("get_subnet %s: registry: %s", subnet, *resp.Err)
	}
	if resp.Ok == nil {
		return nil, fmt.Errorf("get_subnet %s: empty reply", subnet)
	}
	return resp.Ok, nil
}

// GetNodeOperatorsAndDcsOfNodeProvider lists a provider's operators with
// their data centers.
func (r RegistryClient) GetNodeOperatorsAndDcsOfNodeProvider(ctx context.Context, provider principal.Principal) ([]OperatorAndDc, error) {
	resp, err := query[GetNodeOperatorsAndDcsOfNodeProviderResponse](ctx, r.Caller, registryID, "get_node_operators_and_dcs_of_node_provider", provider)
	if err != nil {
		return nil, fmt.Errorf("get_node_operators_and_dcs_of_node_provider %s: %w", provider, err)
	}
	if resp.Err != nil {
		return nil, fmt.Errorf("get_node_operators_and_dcs_of_node_provider %s: registry: %s", provider, *resp.Err)
	}
	if resp.Ok == nil {
		return nil, nil
	}
	return *resp.Ok, nil
}

// SubnetRecord reads subnet_record_<id> as its protobuf.
func (r RegistryClient) SubnetRecord(ctx context.Context, id principal.Principal) (*SubnetRecordPB, bool, error) {
	var rec SubnetRecordPB
	ok, err := getRecord(ctx, r, SubnetRecordKey(id.String()), &rec)
	return &rec, ok, err
}

// NodeRecord reads node_record_<id>.
func (r RegistryClient) NodeRecord(ctx context.Context, id principal.Principal) (*NodeRecordPB, bool, error) {
	var rec NodeRecordPB
	ok, err := getRecord(ctx, r, NodeRecordKey(id.String()), &rec)
	return &rec, ok, err
}

// NodeOperatorRecord reads node_operator_record_<id>.
func (r RegistryClient) NodeOperatorRecord(ctx context.Context, id principal.Principal) (*NodeOperatorRecordPB, bool, error) {
	var rec NodeOperatorRecordPB
	ok, err := getRecord(ctx, r, NodeOperatorRecordKey(id.String()), &rec)
	return &rec, ok, err
}

// DataCenterRecord reads data_center_record_<id>.
func (r RegistryClient) DataCenterRecord(ctx context.Context, id string) (*DataCenterRecordPB, bool, error) {
	var rec DataCenterRecordPB
	ok, err := getRecord(ctx, r, DataCenterRecordKey(id), &rec)
	return &rec, ok, err
}

// ReplicaVersionRecord reads replica_version_<id>; its presence means the
// version is elected.
func (r RegistryClient) ReplicaVersionRecord(ctx context.Context, id string) (*ReplicaVersionRecordPB, bool, error) {
	var rec ReplicaVersionRecordPB
	ok, err := getRecord(ctx, r, ReplicaVersionRecordKey(id), &rec)
	return &rec, ok, err
}

// GovernanceClient calls the governance canister.
type GovernanceClient struct{ Caller Caller }

// ManageNeuron calls manage_neuron (an update call).
func (g GovernanceClient) ManageNeuron(ctx context.Context, req ManageNeuronRequest) (*ManageNeuronResponse, error) {
	arg, err := candid.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("manage_neuron: encode argument: %w", err)
	}
	raw, err := g.Caller.Call(ctx, governanceID, "manage_neuron", arg)
	if err != nil {
		return nil, fmt.Errorf("manage_neuron: %w", err)
	}
	var resp ManageNeuronResponse
	if err := candid.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("manage_neuron: decode reply: %w", err)
	}
	return &resp, nil
}

// MakeProposal makes a proposal with neuron and returns its id; a refusal
// by governance is a *GovernanceError.
func (g GovernanceClient) MakeProposal(ctx context.Context, neuron uint64, p MakeProposalRequest) (uint64, error) {
	resp, err := g.ManageNeuron(ctx, ManageNeuronRequest{
		NeuronIDOrSubaccount: &NeuronIDOrSubaccount{NeuronID: &NeuronID{ID: neuron}},
		Command:              &ManageNeuronCommandRequest{MakeProposal: &p},
	})
	if err != nil {
		return 0, err
	}
	switch {
	case resp.Command == nil:
		return 0, fmt.Errorf("manage_neuron: reply without a command")
	case resp.Command.Error != nil:
		return 0, resp.Command.Error
	case resp.Command.MakeProposal == nil || resp.Command.MakeProposal.ProposalID == nil:
		return 0, fmt.Errorf("manage_neuron: reply without a proposal id")
	}
	return resp.Command.MakeProposal.ProposalID.ID, nil
}

// GetProposalInfo reads a proposal; nil when governance does not have it
// (never made, or purged).
func (g GovernanceClient) GetProposalInfo(ctx context.Context, id uint64) (*ProposalInfo, error) {
	info, err := query[*ProposalInfo](ctx, g.Caller, governanceID, "get_proposal_info", id)
	if err != nil {
		return nil, fmt.Errorf("get_proposal_info %d: %w", id, err)
	}
	return info, nil
}

// GetFullNeuron reads a neuron as its controller or a hotkey (a signed
// query): it proves the caller may propose with it.
func (g GovernanceClient) GetFullNeuron(ctx context.Context, id uint64) (*Neuron, error) {
	resp, err := query[GetFullNeuronResponse](ctx, g.Caller, governanceID, "get_full_neuron", id)
	if err != nil {
		return nil, fmt.Errorf("get_full_neuron %d: %w", id, err)
	}
	if resp.Err != nil {
		return nil, fmt.Errorf("get_full_neuron %d: %w", id, resp.Err)
	}
	if resp.Ok == nil {
		return nil, fmt.Errorf("get_full_neuron %d: empty reply", id)
	}
	return resp.Ok, nil
}

// ListNodeProviders lists the node providers governance knows.
func (g GovernanceClient) ListNodeProviders(ctx context.Context) ([]NodeProvider, error) {
	resp, err := query[ListNodeProvidersResponse](ctx, g.Caller, governanceID, "list_node_providers")
	if err != nil {
		return nil, fmt.Errorf("list_node_providers: %w", err)
	}
	return resp.NodeProviders, nil
}

// ListProposals lists proposals, newest first.
func (g GovernanceClient) ListProposals(ctx context.Context, req ListProposalInfo) ([]ProposalInfo, error) {
	resp, err := query[ListProposalInfoResponse](ctx, g.Caller, governanceID, "list_proposals", req)
	if err != nil {
		return nil, fmt.Errorf("list_proposals: %w", err)
	}
	return resp.ProposalInfo, nil
}
