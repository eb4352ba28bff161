package preflight

import (
	"context"
	"fmt"
	"sync"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Registry is what the fetcher reads from the registry canister;
// nns.RegistryClient satisfies it.
type Registry interface {
	GetLatestVersion(ctx context.Context) (uint64, error)
	GetSubnet(ctx context.Context, subnet principal.Principal) (*nns.SubnetRecord, error)
	GetValue(ctx context.Context, key string, version uint64) ([]byte, uint64, bool, error)
	GetNodeOperatorsAndDcsOfNodeProvider(ctx context.Context, provider principal.Principal) ([]nns.OperatorAndDc, error)
}

// Governance is what the fetcher reads from governance;
// nns.GovernanceClient satisfies it.
type Governance interface {
	ListNodeProviders(ctx context.Context) ([]nns.NodeProvider, error)
}

// Explorer is what the fetcher reads from the registry explorer;
// *source.Explorer satisfies it.
type Explorer interface {
	Elected(ctx context.Context, versionID string) (bool, error)
	OperatorNodes(ctx context.Context, operator string) ([]string, error)
}

// Dashboard is what the fetcher reads from the ICP dashboard;
// *source.Dashboard satisfies it.
type Dashboard interface {
	Elections(ctx context.Context) ([]source.Election, error)
}

// Fetcher reads what a proposal's kind fetches for its checks. The
// registry and governance are authoritative: failing to read them is an
// error. The explorer and dashboard are third parties: failing to read
// them is recorded in the kind's facts and becomes a warning or a note.
type Fetcher struct {
	Registry   Registry
	Governance Governance
	Explorer   Explorer
	Dashboard  Dashboard
	// NodeStatus reads a node's own health; nil: only the dashboard's
	// list tells it (Dashboard, when it is a NodeLister).
	NodeStatus NodeHealth

	// nodesOf lists an operator's nodes from the node records, when the
	// registry read is a certified copy that can (registrycopy.View).
	nodesOf operatorLister
}

// operatorLister lists the nodes whose records name an operator, at the
// registry version read; *registrycopy.View is one.
type operatorLister interface {
	OperatorNodes(ctx context.Context, operator string) ([]string, error)
}

// parallel bounds concurrent reads of subnet records.
const parallel = 8

// Run builds decl's payload against the live state read at one registry
// version (its kind's LiveSubnet's record), checks it there, and reports
// (alp plan).
func (f *Fetcher) Run(ctx context.Context, decl *config.Proposal, opts Options) (Report, error) {
	k := kinds.Of(string(decl.Kind))
	if decl.Body == nil || k == nil {
		return Report{}, fmt.Errorf("proposal %q: kind %q has no block to check", decl.Name, decl.Kind)
	}
	pf, v, err := f.pin(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("preflight %s: %w", decl.Name, err)
	}
	// The payload planned is the one built against the records read, at
	// the version the report pins.
	var live proposal.Live
	if subnet := k.LiveSubnet(decl.Body); subnet != "" {
		if live.Subnet, err = SubnetRecord(ctx, pf.Registry, subnet, 0); err != nil {
			return Report{}, fmt.Errorf("preflight %s: read subnet %s, which the payload inherits from: %w", decl.Name, subnet, err)
		}
	}
	p, err := proposal.BuildLive(decl, live)
	if err != nil {
		return Report{}, err
	}
	return pf.check(ctx, p, decl, v, opts)
}

// Check checks p, the proposal as built (alp apply's, against the
// version it pinned), against the live state read at one registry
// version; decl is its declaration, which says where each finding is
// written.
func (f *Fetcher) Check(ctx context.Context, p *proposal.Proposal, decl *config.Proposal, opts Options) (Report, error) {
	pf, v, err := f.pin(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("preflight %s: %w", p.Name, err)
	}
	return pf.check(ctx, p, decl, v, opts)
}

// check fetches what p's kind reads, evaluates it, and fills in the
// payload p carries.
func (f *Fetcher) check(ctx context.Context, p *proposal.Proposal, decl *config.Proposal, version uint64, opts Options) (Report, error) {
	k := kinds.Of(string(p.Kind))
	if k == nil {
		return Report{}, fmt.Errorf("proposal %q: kind %q has no preflight", p.Name, p.Kind)
	}
	facts, err := k.Fetch(ctx, p.Body, reader{f})
	if err != nil {
		return Report{}, fmt.Errorf("preflight %s: %w", p.Name, err)
	}
	r := Evaluate(decl, Live{RegistryVersion: version, Facts: facts}, opts)
	r.PayloadSHA256 = p.PayloadSHA256
	r.Parts = p.Parts()
	return r, nil
}

// Live is what one proposal's preflight read: the registry's latest
// version when reading began, and the facts its kind fetched (of the
// kind's own type).
type Live struct {
	RegistryVersion uint64
	Facts           kinds.Facts
}

// pin reads the registry's latest version first, so a plan pins a version
// no newer than what it checked, and is f reading every record at it: the
// subnet record too, when the registry client can render it at a version
// as get_subnet would (nns.RegistryClient.At).
// get_node_operators_and_dcs_of_node_provider and list_node_providers are
// Candid methods without a version: they read the latest.
func (f *Fetcher) pin(ctx context.Context) (*Fetcher, uint64, error) {
	v, err := f.Registry.GetLatestVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	return f.at(v), v, nil
}

// at is f reading every record at registry version v.
func (f *Fetcher) at(v uint64) *Fetcher {
	var reg Registry = registryAt{f.Registry, v}
	if p, ok := f.Registry.(pinner); ok {
		reg = p.At(v)
	}
	lister, _ := f.Registry.(operatorLister)
	return &Fetcher{Registry: reg, Governance: f.Governance, Explorer: f.Explorer, Dashboard: f.Dashboard, NodeStatus: f.NodeStatus, nodesOf: lister}
}

// reader is what a kind's Fetch reads through: the fetcher, pinned.
type reader struct{ f *Fetcher }

func (r reader) Subnet(ctx context.Context, id string) (*nns.SubnetRecord, error) {
	return r.f.subnet(ctx, id)
}

func (r reader) SubnetRecord(ctx context.Context, id string) (*nns.SubnetRecordPB, error) {
	return SubnetRecord(ctx, r.f.Registry, id, 0)
}

func (r reader) Nodes(ctx context.Context, ids []string) (map[string]NodeFacts, error) {
	return r.f.nodes(ctx, ids)
}

func (r reader) Version(ctx context.Context, id string) VersionFacts { return r.f.version(ctx, id) }

func (r reader) Operators(ctx context.Context, ids []string) map[string]OperatorFacts {
	return r.f.operators(ctx, ids)
}

func (r reader) Provider(ctx context.Context, id string) (ProviderFacts, error) {
	return r.f.provider(ctx, id)
}

func (r reader) Health(ctx context.Context, ids []string) map[string]kinds.HealthFacts {
	return r.f.health(ctx, ids)
}

func (r reader) Record(ctx context.Context, key string) ([]byte, bool, error) {
	v, _, found, err := r.f.Registry.GetValue(ctx, key, 0)
	return v, found, err
}

// pinner is a registry client that reads everything at one version;
// nns.RegistryClient is one.
type pinner interface {
	At(version uint64) nns.RegistryClient
}

// registryAt reads records at one registry version: a get_value that
// names none reads at version.
type registryAt struct {
	Registry
	version uint64
}

func (r registryAt) GetValue(ctx context.Context, key string, version uint64) ([]byte, uint64, bool, error) {
	if version == 0 {
		version = r.version
	}
	return r.Registry.GetValue(ctx, key, version)
}

// subnet reads a subnet's record; nil when the registry has none.
func (f *Fetcher) subnet(ctx context.Context, id string) (*nns.SubnetRecord, error) {
	p, err := principal.Decode(id)
	if err != nil {
		return nil, fmt.Errorf("subnet %q: %w", id, err)
	}
	rec, err := f.Registry.GetSubnet(ctx, p)
	if err == nil {
		return rec, nil
	}
	// get_subnet answers Err for an unknown subnet; tell that apart from a
	// failed read by asking for the record itself.
	if _, _, found, verr := f.Registry.GetValue(ctx, nns.SubnetRecordKey(id), 0); verr == nil && !found {
		return nil, nil
	}
	return nil, err
}

// SubnetRecord reads a subnet's stored record at version (0: the
// latest, or the version reg is pinned to); nil when there is none.
func SubnetRecord(ctx context.Context, reg Registry, id string, version uint64) (*nns.SubnetRecordPB, error) {
	raw, _, found, err := reg.GetValue(ctx, nns.SubnetRecordKey(id), version)
	if err != nil || !found {
		return nil, err
	}
	var rec nns.SubnetRecordPB
	if err := rec.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("decode %s: %w", nns.SubnetRecordKey(id), err)
	}
	return &rec, nil
}

// nodes reads, for each id, whether node_record_<id> exists, whether it
// carries a chip id, and which subnet lists it (from subnet_list and each
// subnet's record).
func (f *Fetcher) nodes(ctx context.Context, ids []string) (map[string]NodeFacts, error) {
	memberOf, err := f.membership(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]NodeFacts{}
	for _, id := range ids {
		raw, _, found, err := f.Registry.GetValue(ctx, nns.NodeRecordKey(id), 0)
		if err != nil {
			out[id] = NodeFacts{Err: err.Error()}
			continue
		}
		var rec nns.NodeRecordPB
		if found {
			if err := rec.Unmarshal(raw); err != nil {
				out[id] = NodeFacts{Err: fmt.Sprintf("decode %s: %v", nns.NodeRecordKey(id), err)}
				continue
			}
		}
		out[id] = NodeFacts{Registered: found, MemberOf: memberOf[id], HasChip: rec.ChipID != nil, RewardType: rec.RewardType}
		if rec.HostosVersionID != nil {
			f := out[id]
			f.HostOS = *rec.HostosVersionID
			out[id] = f
		}
	}
	return out, nil
}

// membership maps every subnet member to its subnet.
func (f *Fetcher) membership(ctx context.Context) (map[string]string, error) {
	raw, _, found, err := f.Registry.GetValue(ctx, nns.SubnetListKey, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if !found {
		return out, nil
	}
	var list nns.SubnetListRecordPB
	if err := list.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("decode %s: %w", nns.SubnetListKey, err)
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		sem      = make(chan struct{}, parallel)
	)
	for _, b := range list.Subnets {
		id, err := principal.FromBytes(b)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", nns.SubnetListKey, err)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			raw, _, found, err := f.Registry.GetValue(ctx, nns.SubnetRecordKey(id.String()), 0)
			var rec nns.SubnetRecordPB
			if err == nil && found {
				err = rec.Unmarshal(raw)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("subnet %s: %w", id, err)
				}
				return
			}
			for _, m := range rec.Membership {
				if n, err := principal.FromBytes(m); err == nil {
					out[n.String()] = id.String()
				}
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

// version asks the registry whether the version is elected, falling back
// to the explorer when the registry read fails, and the dashboard for its
// release name.
func (f *Fetcher) version(ctx context.Context, id string) VersionFacts {
	v := VersionFacts{ReleaseSource: source.DashboardLabel}
	_, _, found, err := f.Registry.GetValue(ctx, nns.ReplicaVersionRecordKey(id), 0)
	switch {
	case err == nil:
		v.Elected = found
	case f.Explorer != nil:
		elected, eerr := f.Explorer.Elected(ctx, id)
		if eerr != nil {
			v.ElectedErr = fmt.Sprintf("registry: %v; registry explorer: %v", err, eerr)
		} else {
			v.Elected, v.ElectedSource = elected, source.ExplorerLabel
		}
	default:
		v.ElectedErr = err.Error()
	}
	if f.Dashboard == nil {
		v.ReleaseErr = "no dashboard configured"
		return v
	}
	elections, err := f.Dashboard.Elections(ctx)
	if err != nil {
		v.ReleaseErr = err.Error()
		return v
	}
	for _, e := range elections {
		if e.VersionID == id {
			v.Release, v.ProposalID = e.Release, e.ProposalID
		}
	}
	return v
}

func (f *Fetcher) operators(ctx context.Context, ids []string) map[string]OperatorFacts {
	out := map[string]OperatorFacts{}
	for _, id := range ids {
		var o OperatorFacts
		raw, _, found, err := f.Registry.GetValue(ctx, nns.NodeOperatorRecordKey(id), 0)
		if err != nil {
			o.RegisteredErr = err.Error()
		}
		o.Registered = found
		if found {
			var rec nns.NodeOperatorRecordPB
			if err := rec.Unmarshal(raw); err != nil {
				o.RegisteredErr = fmt.Sprintf("decode %s: %v", nns.NodeOperatorRecordKey(id), err)
			} else {
				o.Record = &rec
			}
		}
		switch {
		case f.nodesOf != nil:
			if o.Nodes, err = f.nodesOf.OperatorNodes(ctx, id); err != nil {
				o.NodesErr = err.Error()
			}
		case f.Explorer == nil:
			o.NodesErr = "no registry explorer configured"
		default:
			o.NodesSource = source.ExplorerLabel
			if o.Nodes, err = f.Explorer.OperatorNodes(ctx, id); err != nil {
				o.NodesErr = err.Error()
			}
		}
		out[id] = o
	}
	return out
}

func (f *Fetcher) provider(ctx context.Context, id string) (ProviderFacts, error) {
	p, err := principal.Decode(id)
	if err != nil {
		return ProviderFacts{}, fmt.Errorf("node provider %q: %w", id, err)
	}
	known, err := f.Governance.ListNodeProviders(ctx)
	if err != nil {
		return ProviderFacts{}, err
	}
	var facts ProviderFacts
	for _, np := range known {
		if np.ID != nil && *np.ID == p {
			facts.Known = true
		}
	}
	ops, err := f.Registry.GetNodeOperatorsAndDcsOfNodeProvider(ctx, p)
	if err != nil {
		return ProviderFacts{}, err
	}
	for _, o := range ops {
		if op, err := principal.FromBytes(o.NodeOperator.NodeOperatorPrincipalID); err == nil {
			facts.Operators = append(facts.Operators, op.String())
		}
	}
	return facts, nil
}
