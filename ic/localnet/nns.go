package localnet

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// The NNS canisters at their mainnet ids.
var (
	RegistryID   = principal.MustDecode(nns.RegistryCanisterID)
	GovernanceID = principal.MustDecode(nns.GovernanceCanisterID)
)

// InstallNNS hosts the registry and governance canisters over reg and gov at
// their mainnet ids.
func (s *Server) InstallNNS(reg *registry.Registry, gov *governance.Governance) {
	m := registryMethods(reg)
	m["get_certified_changes_since"] = certifiedChangesSince(reg, s)
	s.Install(RegistryID, m)
	s.Install(GovernanceID, GovernanceCanister(gov))
}

// certifiedChangesSince is get_certified_changes_since: the registry's
// certified tree (current_version, and every version's mutations under
// delta), pruned to the versions after the one asked for, with a
// certificate of its root hash as the registry's certified data.
func certifiedChangesSince(reg *registry.Registry, s *Server) Method {
	// The tree is built once per registry version and kept, its digests
	// with it: a reader paging through a long history asks for many pages
	// of one version, and rebuilding and rehashing the whole tree for each
	// page made a cold sync quadratic in the history's length.
	var (
		mu     sync.Mutex
		cached *registryTree
	)
	return protoMethod(func(req *registrypb.RegistryGetChangesSinceRequest) (*registrypb.CertifiedResponse, error) {
		mu.Lock()
		if cached == nil || cached.latest != reg.Version() {
			tree, sizes, latest, err := certifiedTree(reg)
			if err != nil {
				mu.Unlock()
				return nil, err
			}
			cached = &registryTree{tree: tree, sizes: sizes, latest: latest}
		}
		t := cached
		mu.Unlock()
		tree, sizes, latest := t.tree, t.sizes, t.latest
		// A page, as the canister answers: whole deltas, oldest first,
		// until they reach the reply bound (at least one); the reader asks
		// again from the last version it got.
		limit := reg.MaxChangesBytes
		if limit <= 0 {
			limit = registry.DefaultMaxChangesBytes
		}
		paths := [][][]byte{certificate.Path("current_version")}
		total := 0
		for v := req.Version + 1; v <= latest; v++ {
			if total > 0 && total+sizes[v] > limit {
				break
			}
			total += sizes[v]
			paths = append(paths, [][]byte{[]byte("delta"), binary.BigEndian.AppendUint64(nil, v)})
		}
		root := tree.Digest()
		cert, err := s.DataCertificate(RegistryID, root[:])
		if err != nil {
			return nil, err
		}
		return &registrypb.CertifiedResponse{HashTree: nns.MixedHashTreeOf(certificate.Prune(tree, paths...)), Certificate: cert}, nil
	})
}

// registryTree is certifiedTree's answer at one registry version.
type registryTree struct {
	tree   *certificate.Tree
	sizes  map[uint64]int
	latest uint64
}

// certifiedTree builds the tree whose root hash the registry certifies
// (rs/registry/canister/src/certification.rs): a write is an UPSERT and a
// deletion a DELETE; a value of MinChunkableValueLen bytes or more is
// carried by the keys of its chunks.
func certifiedTree(reg *registry.Registry) (*certificate.Tree, map[uint64]int, uint64, error) {
	b := certificate.NewBuilder()
	latest := reg.Version()
	if err := b.Insert(certificate.Path("current_version"), leb128.AppendUnsigned(nil, latest)); err != nil {
		return nil, nil, 0, err
	}
	sizes := map[uint64]int{}
	for _, vc := range reg.Changelog() {
		var req registrypb.HighCapacityRegistryAtomicMutateRequest
		for _, c := range vc.Changes {
			m := &registrypb.HighCapacityRegistryMutation{Key: []byte(c.Key), MutationType: registrypb.RegistryMutation_UPSERT}
			switch {
			case c.Value == nil:
				m.MutationType = registrypb.RegistryMutation_DELETE
			case c.ChunkKeys != nil:
				m.Content = &registrypb.HighCapacityRegistryMutation_LargeValueChunkKeys{LargeValueChunkKeys: &registrypb.LargeValueChunkKeys{ChunkContentSha256S: c.ChunkKeys}}
			default:
				m.Content = &registrypb.HighCapacityRegistryMutation_Value{Value: c.Value}
			}
			req.Mutations = append(req.Mutations, m)
		}
		raw, err := proto.Marshal(&req)
		if err != nil {
			return nil, nil, 0, err
		}
		if err := b.Insert([][]byte{[]byte("delta"), binary.BigEndian.AppendUint64(nil, vc.Version)}, raw); err != nil {
			return nil, nil, 0, err
		}
		sizes[vc.Version] = len(raw)
	}
	return b.Build(), sizes, latest, nil
}

// protoMethod adapts a typed handler to a protobuf query method, as the
// registry's get_value and get_changes_since are. A request that does not
// decode is the canister's trap.
func protoMethod[A any, PA interface {
	*A
	proto.Message
}, R proto.Message](f func(PA) (R, error)) Method {
	return Method{Query: true, Handler: func(_ context.Context, _ principal.Principal, raw []byte) ([]byte, error) {
		req := PA(new(A))
		if err := proto.Unmarshal(raw, req); err != nil {
			return nil, fmt.Errorf("decode %s: %w", req.ProtoReflect().Descriptor().Name(), err)
		}
		resp, err := f(req)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(resp)
	}}
}

// candidMethod adapts a typed handler to a Candid method: decode one
// argument of type A, encode the one result of type R. An argument that does
// not decode is the canister's trap, as with a Rust canister's candid
// decoding.
func candidMethod[A, R any](query bool, f func(ctx context.Context, caller principal.Principal, arg A) (R, error)) Method {
	return Method{Query: query, Handler: func(ctx context.Context, caller principal.Principal, raw []byte) ([]byte, error) {
		var a A
		if err := candid.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("failed to decode call arguments: %w", err)
		}
		r, err := f(ctx, caller, a)
		if err != nil {
			return nil, err
		}
		return candid.Marshal(r)
	}}
}

// RegistryCanister is the registry's query interface over reg (InstallNNS
// adds get_certified_changes_since, which needs the server's key): get_subnet,
// get_node_operators_and_dcs_of_node_provider (Candid), and get_value,
// get_latest_version and get_changes_since (protobuf, as on mainnet). Its mutations run through governance
// proposals (RegistryExecutor), which is the only way they run on mainnet.
func RegistryCanister(reg *registry.Registry) Canister { return registryMethods(reg) }

func registryMethods(reg *registry.Registry) Methods {
	m := Methods{
		"get_subnet": candidMethod(true, func(_ context.Context, _ principal.Principal, req nns.GetSubnetRequest) (nns.GetSubnetResponse, error) {
			if req.SubnetID == nil {
				msg := "subnet_id is required"
				return nns.GetSubnetResponse{Err: &msg}, nil
			}
			rec, ok, err := reg.Subnet(*req.SubnetID)
			if err != nil {
				return nns.GetSubnetResponse{}, err
			}
			if !ok {
				msg := fmt.Sprintf("Subnet %s not found in the registry", *req.SubnetID)
				return nns.GetSubnetResponse{Err: &msg}, nil
			}
			out := rec.Candid()
			return nns.GetSubnetResponse{Ok: &out}, nil
		}),
		"get_node_operators_and_dcs_of_node_provider": candidMethod(true, func(_ context.Context, _ principal.Principal, provider principal.Principal) (nns.GetNodeOperatorsAndDcsOfNodeProviderResponse, error) {
			ops, dcs, err := reg.OperatorsOfProvider(provider)
			if err != nil {
				msg := err.Error()
				return nns.GetNodeOperatorsAndDcsOfNodeProviderResponse{Err: &msg}, nil
			}
			list := []nns.OperatorAndDc{}
			for i, op := range ops {
				dc := dcs[i]
				var gps *nns.Gps
				if dc.Gps != nil {
					gps = dc.Gps
				}
				entry := nns.OperatorAndDc{
					DataCenter: nns.DataCenterRecordDid{ID: dc.ID, Region: dc.Region, Owner: dc.Owner, Gps: gps},
					NodeOperator: nns.NodeOperatorRecordDid{
						IPv6: op.IPv6, NodeOperatorPrincipalID: op.NodeOperatorPrincipalID, NodeAllowance: op.NodeAllowance,
						NodeProviderPrincipalID: op.NodeProviderPrincipalID, DcID: op.DcID,
						RewardableNodes: typeCounts(op.RewardableNodes), MaxRewardableNodes: []nns.NodeTypeCount{},
					},
				}
				list = append(list, entry)
			}
			return nns.GetNodeOperatorsAndDcsOfNodeProviderResponse{Ok: &list}, nil
		}),
		"get_value": protoMethod(func(req *registrypb.RegistryGetValueRequest) (*registrypb.HighCapacityRegistryGetValueResponse, error) {
			e, ok := reg.EntryAt(string(req.Key), req.GetVersion().GetValue())
			if !ok {
				return &registrypb.HighCapacityRegistryGetValueResponse{Error: &registrypb.RegistryError{
					Code: registrypb.RegistryError_KEY_NOT_PRESENT, Reason: "key not present", Key: req.Key,
				}}, nil
			}
			resp := &registrypb.HighCapacityRegistryGetValueResponse{Version: e.Version}
			if e.ChunkKeys != nil {
				resp.Content = &registrypb.HighCapacityRegistryGetValueResponse_LargeValueChunkKeys{LargeValueChunkKeys: &registrypb.LargeValueChunkKeys{ChunkContentSha256S: e.ChunkKeys}}
			} else {
				resp.Content = &registrypb.HighCapacityRegistryGetValueResponse_Value{Value: e.Value}
			}
			return resp, nil
		}),
		"get_chunk": candidMethod(true, func(_ context.Context, _ principal.Principal, req nns.GetChunkRequest) (nns.GetChunkResponse, error) {
			if req.ContentSha256 == nil {
				msg := "content_sha256 is required"
				return nns.GetChunkResponse{Err: &msg}, nil
			}
			c, ok := reg.Chunk(*req.ContentSha256)
			if !ok {
				msg := fmt.Sprintf("no chunk with SHA256 %x", *req.ContentSha256)
				return nns.GetChunkResponse{Err: &msg}, nil
			}
			return nns.GetChunkResponse{Ok: &nns.Chunk{Content: &c}}, nil
		}),
		"get_latest_version": {Query: true, Handler: func(context.Context, principal.Principal, []byte) ([]byte, error) {
			return proto.Marshal(&registrypb.RegistryGetLatestVersionResponse{Version: reg.Version()})
		}},
		"get_changes_since": protoMethod(func(req *registrypb.RegistryGetChangesSinceRequest) (*registrypb.HighCapacityRegistryGetChangesSinceResponse, error) {
			changes, keys, latest := reg.ChangesSince(req.Version)
			resp := &registrypb.HighCapacityRegistryGetChangesSinceResponse{Version: latest}
			for _, k := range keys {
				d := &registrypb.HighCapacityRegistryDelta{Key: []byte(k)}
				for _, e := range changes[k] {
					v := &registrypb.HighCapacityRegistryValue{Version: e.Version}
					switch {
					case e.Value == nil:
						v.Content = &registrypb.HighCapacityRegistryValue_DeletionMarker{DeletionMarker: true}
					case e.ChunkKeys != nil:
						v.Content = &registrypb.HighCapacityRegistryValue_LargeValueChunkKeys{LargeValueChunkKeys: &registrypb.LargeValueChunkKeys{ChunkContentSha256S: e.ChunkKeys}}
					default:
						v.Content = &registrypb.HighCapacityRegistryValue_Value{Value: e.Value}
					}
					d.Values = append(d.Values, v)
				}
				resp.Deltas = append(resp.Deltas, d)
			}
			return resp, nil
		}),
	}
	for _, fn := range []nns.NnsFunction{nns.FunctionChangeSubnetMembership, nns.FunctionDeployGuestosToAllSubnetNodes,
		nns.FunctionUpdateConfigOfSubnet, nns.FunctionRemoveNodes, nns.FunctionRemoveNodeOperators} {
		method, _ := fn.RegistryMethod()
		m[method] = governanceOnly(method)
	}
	return m
}

// governanceOnly is a registry mutation method as seen from outside: on
// mainnet only governance may call it (executing an adopted proposal), so
// any other caller traps. The local governance runs mutations through
// RegistryExecutor, never through this door.
func governanceOnly(method string) Method {
	return Method{Handler: func(_ context.Context, caller principal.Principal, _ []byte) ([]byte, error) {
		return nil, fmt.Errorf("%s: caller %s is not authorized; only the governance canister %s may call it", method, caller, GovernanceID)
	}}
}

func typeCounts(m map[string]uint32) []nns.NodeTypeCount {
	out := []nns.NodeTypeCount{}
	for k, v := range m {
		out = append(out, nns.NodeTypeCount{NodeType: k, Count: v})
	}
	return out
}

// GovernanceCanister is governance's interface over gov: manage_neuron
// (update), get_proposal_info, get_full_neuron, list_node_providers and
// list_proposals (queries).
func GovernanceCanister(gov *governance.Governance) Canister {
	return Methods{
		"manage_neuron": candidMethod(false, func(_ context.Context, caller principal.Principal, req nns.ManageNeuronRequest) (nns.ManageNeuronResponse, error) {
			return gov.ManageNeuron(caller, req), nil
		}),
		"get_proposal_info": candidMethod(true, func(_ context.Context, _ principal.Principal, id uint64) (*nns.ProposalInfo, error) {
			return gov.ProposalInfo(id), nil
		}),
		"get_full_neuron": candidMethod(true, func(_ context.Context, caller principal.Principal, id uint64) (nns.GetFullNeuronResponse, error) {
			return gov.FullNeuron(caller, id), nil
		}),
		"list_node_providers": {Query: true, Handler: func(context.Context, principal.Principal, []byte) ([]byte, error) {
			return candid.Marshal(gov.ListNodeProviders())
		}},
		"list_proposals": candidMethod(true, func(_ context.Context, _ principal.Principal, req nns.ListProposalInfo) (nns.ListProposalInfoResponse, error) {
			return gov.ListProposals(req), nil
		}),
	}
}

// RegistryExecutor executes adopted ExecuteNnsFunction proposals against
// reg: it decodes the Candid payload as the registry method the function
// names would, and runs the mutation. A payload that does not decode fails
// the proposal, as it does on mainnet.
func RegistryExecutor(reg *registry.Registry) governance.Executor {
	return governance.ExecutorFunc(func(fn nns.NnsFunction, payload []byte) error {
		method, _ := fn.RegistryMethod()
		decode := func(v any) error {
			if err := candid.Unmarshal(payload, v); err != nil {
				return fmt.Errorf("registry %s: failed to decode the payload: %w", method, err)
			}
			return nil
		}
		switch fn {
		case nns.FunctionChangeSubnetMembership:
			var p nns.ChangeSubnetMembershipPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.ChangeSubnetMembership(p)
		case nns.FunctionDeployGuestosToAllSubnetNodes:
			var p nns.DeployGuestosToAllSubnetNodesPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.DeployGuestosToAllSubnetNodes(p)
		case nns.FunctionUpdateConfigOfSubnet:
			var p nns.UpdateSubnetPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.UpdateSubnet(p)
		case nns.FunctionRemoveNodes:
			var p nns.RemoveNodesPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.RemoveNodes(p)
		case nns.FunctionRemoveNodeOperators:
			var p nns.RemoveNodeOperatorsPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.RemoveNodeOperators(p)
		case nns.FunctionAssignNoid:
			var p nns.AddNodeOperatorPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.AssignNoid(p)
		case nns.FunctionUpdateNodeOperatorConfig:
			var p nns.UpdateNodeOperatorConfigPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.UpdateNodeOperatorConfig(p)
		case nns.FunctionDeployHostosToSomeNodes:
			var p nns.DeployHostosToSomeNodesPayload
			if err := decode(&p); err != nil {
				return err
			}
			return reg.DeployHostosToSomeNodes(p)
		}
		return fmt.Errorf("%s is not supported by the local network", fn)
	})
}
