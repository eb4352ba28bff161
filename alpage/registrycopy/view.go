package registrycopy

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// View reads the copy at one version as the registry canister answers:
// it satisfies reconcile.Registry and preflight's registry reads, and
// lists each operator's nodes from the node records themselves.
type View struct {
	c       *Copy
	version uint64

	indexed   *lazy
	byOp      map[string][]string // operator → its node ids, sorted
	operators map[string][]nns.NodeOperatorRecordPB

	loaded           *lazy
	nodeRecs, opRecs []Record          // every node and operator record, by key
	records          map[string]Record // the same, by key
}

// At is a view of the copy at version.
func (c *Copy) At(version uint64) *View {
	return &View{c: c, version: version, indexed: newLazy(), loaded: newLazy()}
}

// lazy is a build a view runs once it succeeds. Only its success, or an
// error the records themselves cause (one that does not decode), is kept:
// a build that fails for its caller (its context ended, a read of the file
// failed) is run again by the next caller, so one cancelled caller does not
// fail the view for every later one. One caller builds at a time; the
// others wait for it, or for their own context.
type lazy struct {
	turn chan struct{} // holds a token while a caller builds
	done bool          // err is the build's kept outcome
	err  error
}

func newLazy() *lazy { return &lazy{turn: make(chan struct{}, 1)} }

// do runs build unless an earlier one's outcome was kept, and returns the
// outcome. build says whether its error is final (kept like a success).
func (l *lazy) do(ctx context.Context, build func() (final bool, err error)) error {
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("registry copy view: waiting for another read of the records: %w", ctx.Err())
	}
	defer func() { <-l.turn }()
	if l.done {
		return l.err
	}
	final, err := build()
	if err == nil || final {
		l.done, l.err = true, err
	}
	return err
}

// GetLatestVersion is the view's version: every read through the view is at
// it.
func (v *View) GetLatestVersion(context.Context) (uint64, error) { return v.version, nil }

// GetValue reads key at version, or at the view's version when version is
// 0 or beyond it. A node or operator record at the view's version comes
// from the view's one scan of them (loadRecords): reconcile reads each of a
// fleet's 1,500 node records, and one query apiece was most of its
// registry reads' CPU.
func (v *View) GetValue(ctx context.Context, key string, version uint64) ([]byte, uint64, bool, error) {
	if version == 0 || version > v.version {
		version = v.version
	}
	if version == v.version && (strings.HasPrefix(key, nodeRecordPrefix) || strings.HasPrefix(key, operatorRecordPrefix)) {
		if err := v.loadRecords(ctx); err != nil {
			return nil, 0, false, err
		}
		r, ok := v.records[key]
		return r.Value, r.Version, ok, nil
	}
	return v.c.Get(ctx, key, version)
}

// loadRecords reads every node and operator record at the view's version
// once, undecoded: GetValue answers from them, and index decodes them.
// A failed scan is not kept: the next caller scans again.
func (v *View) loadRecords(ctx context.Context) error {
	return v.loaded.do(ctx, func() (bool, error) {
		var err error
		v.records = map[string]Record{}
		if v.nodeRecs, err = v.c.Scan(ctx, nodeRecordPrefix, v.version); err != nil {
			return false, err
		}
		if v.opRecs, err = v.c.Scan(ctx, operatorRecordPrefix, v.version); err != nil {
			return false, err
		}
		for _, r := range append(v.nodeRecs[:len(v.nodeRecs):len(v.nodeRecs)], v.opRecs...) {
			v.records[r.Key] = r
		}
		return false, nil
	})
}

// index decodes every node and operator record at the view's version once.
// A record that does not decode fails the view for good (the records at a
// version do not change); a failed read of them is tried again by the next
// caller.
func (v *View) index(ctx context.Context) error {
	return v.indexed.do(ctx, func() (bool, error) {
		v.byOp, v.operators = map[string][]string{}, map[string][]nns.NodeOperatorRecordPB{}
		if err := v.loadRecords(ctx); err != nil {
			return false, err
		}
		err := decodeEach(v.nodeRecs, func(r Record, rec *nns.NodeRecordPB) {
			op := principalText(rec.NodeOperatorID)
			v.byOp[op] = append(v.byOp[op], strings.TrimPrefix(r.Key, nodeRecordPrefix))
		})
		for _, ids := range v.byOp {
			sort.Strings(ids)
		}
		if err == nil {
			err = decodeEach(v.opRecs, func(_ Record, rec *nns.NodeOperatorRecordPB) {
				p := principalText(rec.NodeProviderPrincipalID)
				v.operators[p] = append(v.operators[p], *rec)
			})
		}
		return true, err
	})
}

// decodeEach decodes every record of recs and hands each to f.
func decodeEach[R any, PR interface {
	*R
	Unmarshal([]byte) error
}](recs []Record, f func(r Record, rec PR)) error {
	for _, r := range recs {
		rec := PR(new(R))
		if err := rec.Unmarshal(r.Value); err != nil {
			return fmt.Errorf("decode %s: %w", r.Key, err)
		}
		f(r, rec)
	}
	return nil
}

var (
	nodeRecordPrefix     = nns.NodeRecordKey("")
	operatorRecordPrefix = nns.NodeOperatorRecordKey("")
)

// OperatorNodes lists the nodes whose record names operator as their
// node_operator_id, sorted: the registry's own answer to what the explorer
// was asked.
func (v *View) OperatorNodes(ctx context.Context, operator string) ([]string, error) {
	if err := v.index(ctx); err != nil {
		return nil, err
	}
	return v.byOp[operator], nil
}

// GetNodeOperatorsAndDcsOfNodeProvider answers as the registry canister
// does: every operator record whose node_provider_principal_id is provider,
// with its data center record (empty when there is none).
func (v *View) GetNodeOperatorsAndDcsOfNodeProvider(ctx context.Context, provider principal.Principal) ([]nns.OperatorAndDc, error) {
	if err := v.index(ctx); err != nil {
		return nil, err
	}
	var out []nns.OperatorAndDc
	for _, op := range v.operators[provider.String()] {
		var dc nns.DataCenterRecordPB
		raw, _, found, err := v.GetValue(ctx, nns.DataCenterRecordKey(op.DcID), 0)
		if err != nil {
			return nil, err
		}
		if found {
			if err := dc.Unmarshal(raw); err != nil {
				return nil, fmt.Errorf("decode data center %s: %w", op.DcID, err)
			}
		}
		out = append(out, nns.OperatorAndDc{
			DataCenter: nns.DataCenterRecordDid{ID: dc.ID, Region: dc.Region, Owner: dc.Owner},
			NodeOperator: nns.NodeOperatorRecordDid{
				NodeOperatorPrincipalID: op.NodeOperatorPrincipalID, NodeProviderPrincipalID: op.NodeProviderPrincipalID,
				NodeAllowance: op.NodeAllowance, DcID: op.DcID, IPv6: op.IPv6,
			},
		})
	}
	return out, nil
}

func principalText(b []byte) string {
	p, err := principal.FromBytes(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return p.String()
}

// GetSubnet renders the subnet record at the view's version as get_subnet
// answers it; an absent record is the error get_subnet gives.
func (v *View) GetSubnet(ctx context.Context, subnet principal.Principal) (*nns.SubnetRecord, error) {
	raw, _, found, err := v.GetValue(ctx, nns.SubnetRecordKey(subnet.String()), 0)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("get_subnet %s: Subnet %s not found in the registry", subnet, subnet)
	}
	var rec nns.SubnetRecordPB
	if err := rec.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("decode %s: %w", nns.SubnetRecordKey(subnet.String()), err)
	}
	out := rec.Candid()
	return &out, nil
}

// ElectedVersions lists the ids of the replica_version_<id> records present
// at the view's version, sorted: what the registry counts as elected
// (nns.RegistryClient.ElectedVersions, without reading the whole log).
func (v *View) ElectedVersions(ctx context.Context) ([]string, error) {
	recs, err := v.c.Scan(ctx, replicaVersionPrefix, v.version)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, strings.TrimPrefix(r.Key, replicaVersionPrefix))
	}
	return ids, nil
}

var replicaVersionPrefix = nns.ReplicaVersionRecordKey("")
