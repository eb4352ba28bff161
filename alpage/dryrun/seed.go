// Package dryrun executes a proposal on a fresh local NNS before it is sent
// to the real one. The reference tool ran its dry run against an empty
// registry, so every proposal failed on execution and the run only proved
// that the payload decodes. Here the local registry is seeded with the live
// records the proposal touches — the subnet record and its members, every
// other subnet's membership (a node may belong to any of them), the nodes
// the payload names and their operators, the elected versions, the
// providers governance knows — so execution meets the registry's real
// invariants: a sev_enabled change, removing a subnet member, deploying an
// unelected version all fail here, with the registry's reason, before
// anything is submitted.
//
// Gather reads the seed from live state (I/O, behind small interfaces);
// Run executes on an in-process replica that never opens a socket.
package dryrun

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Registry reads live registry records by key; nns.RegistryClient
// satisfies it. found is false for an absent (or deleted) key.
type Registry interface {
	GetValue(ctx context.Context, key string, version uint64) (value []byte, at uint64, found bool, err error)
}

// Governance lists the node providers governance knows;
// nns.GovernanceClient satisfies it.
type Governance interface {
	ListNodeProviders(ctx context.Context) ([]nns.NodeProvider, error)
}

// Live is where a seed is read from.
type Live struct {
	Registry Registry
	// Version is the registry version every record is read at, so the
	// seed is one registry state (0: the latest at each read).
	Version    uint64
	Governance Governance
	// OperatorNodes lists the nodes an operator owns (the registry has no
	// such index; the registry explorer has). Nil leaves remove_node_operators
	// seeded without those nodes, and the seed says so.
	OperatorNodes func(ctx context.Context, operator string) ([]string, error)
}

// Seed is the live state a dry run starts from.
type Seed struct {
	// Records are registry records by key, protobuf values as read live.
	Records map[string][]byte
	// Absent are keys that were read and not found.
	Absent []string
	// Providers are the node providers governance knows.
	Providers []principal.Principal
	// Notes say what could not be seeded, so the result is read with that
	// in mind.
	Notes []string
	// RegistryVersion is the version the records were read at (0: not
	// pinned).
	RegistryVersion uint64
}

// parallel bounds concurrent reads of live records.
const parallel = 8

// Gather reads the live records p touches.
func Gather(ctx context.Context, live Live, p *proposal.Proposal) (*Seed, error) {
	g := &gatherer{live: live, seed: &Seed{Records: map[string][]byte{}, RegistryVersion: live.Version}, read: map[string]bool{}}
	c, err := claimed(p)
	if err == nil {
		err = c.Seed(ctx, g)
	}
	if err != nil {
		return nil, fmt.Errorf("dry run: seed from live state: %w", err)
	}
	slices.Sort(g.seed.Absent)
	return g.seed, nil
}

// claimed is p's action as its kind claims it: the dry run seeds from,
// and checks the effects of, what will be sent.
func claimed(p *proposal.Proposal) (*kinds.Claimed, error) {
	k := kinds.Of(string(p.Kind))
	if k == nil {
		return nil, fmt.Errorf("proposal %q has no kind to seed", p.Name)
	}
	c, mine := k.Claim(p.Action)
	switch {
	case !mine:
		return nil, fmt.Errorf("proposal %q makes a %s action, which is not a %s proposal's (%s)", p.Name, kinds.ShapeOf(p.Action), p.Kind, k.Shape())
	case c == nil:
		return nil, fmt.Errorf("proposal %q: its %s payload does not decode", p.Name, p.Kind)
	}
	return c, nil
}

type gatherer struct {
	live Live
	mu   sync.Mutex
	seed *Seed
	read map[string]bool
}

// Records reads keys concurrently (bounded) into the seed, skipping keys
// already read.
func (g *gatherer) Records(ctx context.Context, keys ...string) error {
	var todo []string
	g.mu.Lock()
	for _, k := range keys {
		if !g.read[k] {
			g.read[k] = true
			todo = append(todo, k)
		}
	}
	g.mu.Unlock()
	sem := make(chan struct{}, parallel)
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, k := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			v, _, ok, err := g.live.Registry.GetValue(ctx, k, g.live.Version)
			if err != nil {
				errs[i] = err
				return
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if ok {
				g.seed.Records[k] = v
			} else {
				g.seed.Absent = append(g.seed.Absent, k)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *gatherer) record(key string) ([]byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.seed.Records[key]
	return v, ok
}

// AllSubnets seeds subnet_list and every subnet record in it: whether a
// node is a member of some subnet is only written in the subnet records.
func (g *gatherer) AllSubnets(ctx context.Context) error {
	if err := g.Records(ctx, nns.SubnetListKey); err != nil {
		return err
	}
	raw, ok := g.record(nns.SubnetListKey)
	if !ok {
		return nil
	}
	var list nns.SubnetListRecordPB
	if err := list.Unmarshal(raw); err != nil {
		return fmt.Errorf("decode %s: %w", nns.SubnetListKey, err)
	}
	var keys []string
	for _, s := range list.Subnets {
		if id, err := principal.FromBytes(s); err == nil {
			keys = append(keys, nns.SubnetRecordKey(id.String()))
		}
	}
	return g.Records(ctx, keys...)
}

func (g *gatherer) Subnet(id principal.Principal) (*nns.SubnetRecordPB, bool, error) {
	raw, ok := g.record(nns.SubnetRecordKey(id.String()))
	if !ok {
		return nil, false, nil
	}
	var rec nns.SubnetRecordPB
	if err := rec.Unmarshal(raw); err != nil {
		return nil, false, fmt.Errorf("decode subnet %s: %w", id, err)
	}
	return &rec, true, nil
}

// Nodes seeds the node records of ids and their operators' records.
func (g *gatherer) Nodes(ctx context.Context, ids []principal.Principal) error {
	var keys []string
	for _, id := range ids {
		keys = append(keys, nns.NodeRecordKey(id.String()))
	}
	if err := g.Records(ctx, keys...); err != nil {
		return err
	}
	var ops []string
	for _, k := range keys {
		raw, ok := g.record(k)
		if !ok {
			continue
		}
		var rec nns.NodeRecordPB
		if err := rec.Unmarshal(raw); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		if op, err := principal.FromBytes(rec.NodeOperatorID); err == nil {
			ops = append(ops, nns.NodeOperatorRecordKey(op.String()))
		}
	}
	return g.Records(ctx, ops...)
}

// SubnetWithMembers seeds subnet_list, the subnet's record and its
// members' node records: the registry checks its invariants on every subnet
// record a proposal writes, in subnet_list order, and those read the
// members' records (registered, with a chip when SEV is on).
func (g *gatherer) SubnetWithMembers(ctx context.Context, id principal.Principal) error {
	if err := g.Records(ctx, nns.SubnetListKey, nns.SubnetRecordKey(id.String())); err != nil {
		return err
	}
	rec, ok, err := g.Subnet(id)
	if err != nil || !ok {
		return err
	}
	var members []principal.Principal
	for _, m := range rec.Membership {
		if p, err := principal.FromBytes(m); err == nil {
			members = append(members, p)
		}
	}
	return g.Nodes(ctx, members)
}

// OperatorNodes seeds the nodes each operator owns, as Live's
// OperatorNodes lists them; without it the seed says so.
func (g *gatherer) OperatorNodes(ctx context.Context, ops []principal.Principal) error {
	if g.live.OperatorNodes == nil {
		g.seed.Notes = append(g.seed.Notes, "the operators' nodes were not seeded (no registry explorer to list them), so an operator that still owns nodes is not caught here")
		return nil
	}
	var nodes []principal.Principal
	for _, op := range ops {
		ids, err := g.live.OperatorNodes(ctx, op.String())
		if err != nil {
			return fmt.Errorf("nodes of operator %s: %w", op, err)
		}
		for _, id := range ids {
			p, err := principal.Decode(id)
			if err != nil {
				return fmt.Errorf("nodes of operator %s: %q: %w", op, id, err)
			}
			nodes = append(nodes, p)
		}
	}
	return g.Nodes(ctx, nodes)
}

// Providers seeds the node providers governance knows.
func (g *gatherer) Providers(ctx context.Context) error {
	list, err := g.live.Governance.ListNodeProviders(ctx)
	if err != nil {
		return fmt.Errorf("list_node_providers: %w", err)
	}
	for _, np := range list {
		if np.ID != nil {
			g.seed.Providers = append(g.seed.Providers, *np.ID)
		}
	}
	return nil
}
