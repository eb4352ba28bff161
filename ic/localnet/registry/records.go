package registry

import (
	"fmt"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Typed reads of the records the local network uses. Each returns ok=false
// when the record is absent; a record that fails to decode is reported as an
// error because only this package writes them.

// Subnet reads subnet_record_<id>.
func (r *Registry) Subnet(id principal.Principal) (nns.SubnetRecordPB, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.subnet(id)
}

// Node reads node_record_<id>.
func (r *Registry) Node(id principal.Principal) (nns.NodeRecordPB, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.node(id)
}

// NodeOperator reads node_operator_record_<id>.
func (r *Registry) NodeOperator(id principal.Principal) (nns.NodeOperatorRecordPB, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.operator(id)
}

// DataCenter reads data_center_record_<id>.
func (r *Registry) DataCenter(id string) (nns.DataCenterRecordPB, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var rec nns.DataCenterRecordPB
	b, ok := view{r: r}.get(nns.DataCenterRecordKey(id))
	if !ok {
		return rec, false, nil
	}
	if err := rec.Unmarshal(b); err != nil {
		return rec, false, fmt.Errorf("decode data center %s: %w", id, err)
	}
	return rec, true, nil
}

// Elected reports whether a replica version is elected: its
// replica_version_<id> record is present (as nns.ElectedVersions reads it;
// the blessed_replica_versions list is not consulted).
func (r *Registry) Elected(versionID string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := view{r: r}.get(nns.ReplicaVersionRecordKey(versionID))
	return ok
}

// ElectedVersions lists the elected versions, sorted.
func (r *Registry) ElectedVersions() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.elected()
}

// elected lists the ids of the replica_version_<id> records present, sorted.
func (v view) elected() []string {
	var ids []string
	for _, k := range v.keys(nns.ReplicaVersionRecordKey("")) {
		ids = append(ids, strings.TrimPrefix(k, nns.ReplicaVersionRecordKey("")))
	}
	return ids
}

// Subnets lists every subnet with a record.
func (r *Registry) Subnets() []principal.Principal {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.ids("subnet_record_")
}

// Nodes lists every registered node.
func (r *Registry) Nodes() []principal.Principal {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.ids("node_record_")
}

// NodeOperators lists every node operator with a record.
func (r *Registry) NodeOperators() []principal.Principal {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.ids("node_operator_record_")
}

// NodesOfOperator lists the registered nodes whose record names operator.
func (r *Registry) NodesOfOperator(operator principal.Principal) ([]principal.Principal, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return view{r: r}.nodesOf(operator)
}

// SubnetOf returns the subnet a node is a member of. It answers from an
// index of every subnet's members built once per registry version: a
// devnet asks it for every node status read, and scanning and decoding
// every subnet record each time made those reads cost O(nodes × subnets).
func (r *Registry) SubnetOf(node principal.Principal) (principal.Principal, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	idx, err := r.membersLocked()
	if err != nil {
		return principal.Principal{}, false, err
	}
	s, ok := idx[string(node.Bytes())]
	return s, ok, nil
}

// memberIndex maps a node's principal bytes to its subnet, at one version.
type memberIndex struct {
	version uint64
	subnet  map[string]principal.Principal
}

// membersLocked returns the member index at the current version, building
// it when the version moved; the read lock is held. A node listed by two
// subnets (which the invariants refuse) maps to the first in key order, as
// view.subnetOf answers.
func (r *Registry) membersLocked() (map[string]principal.Principal, error) {
	r.membersMu.Lock()
	defer r.membersMu.Unlock()
	if r.members != nil && r.members.version == r.version {
		return r.members.subnet, nil
	}
	v := view{r: r}
	idx := map[string]principal.Principal{}
	for _, s := range v.ids("subnet_record_") {
		rec, _, err := v.subnet(s)
		if err != nil {
			return nil, err
		}
		for _, m := range rec.Membership {
			if _, seen := idx[string(m)]; !seen {
				idx[string(m)] = s
			}
		}
	}
	r.members = &memberIndex{version: r.version, subnet: idx}
	return idx, nil
}

func (v view) ids(prefix string) []principal.Principal {
	var out []principal.Principal
	for _, k := range v.keys(prefix) {
		if p, err := principal.Decode(strings.TrimPrefix(k, prefix)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func (v view) subnet(id principal.Principal) (nns.SubnetRecordPB, bool, error) {
	var rec nns.SubnetRecordPB
	b, ok := v.get(nns.SubnetRecordKey(id.String()))
	if !ok {
		return rec, false, nil
	}
	if err := rec.Unmarshal(b); err != nil {
		return rec, false, fmt.Errorf("decode subnet %s: %w", id, err)
	}
	return rec, true, nil
}

// existingSubnet is subnet for a proposal: a subnet that is not in the
// registry refuses the proposal.
func (v view) existingSubnet(id principal.Principal) (nns.SubnetRecordPB, error) {
	rec, ok, err := v.subnet(id)
	if err == nil && !ok {
		err = refuse("Failed to get subnet record: Subnet record for %s not found in the registry.", id)
	}
	return rec, err
}

func (v view) node(id principal.Principal) (nns.NodeRecordPB, bool, error) {
	var rec nns.NodeRecordPB
	b, ok := v.get(nns.NodeRecordKey(id.String()))
	if !ok {
		return rec, false, nil
	}
	if err := rec.Unmarshal(b); err != nil {
		return rec, false, fmt.Errorf("decode node %s: %w", id, err)
	}
	return rec, true, nil
}

func (v view) operator(id principal.Principal) (nns.NodeOperatorRecordPB, bool, error) {
	var rec nns.NodeOperatorRecordPB
	b, ok := v.get(nns.NodeOperatorRecordKey(id.String()))
	if !ok {
		return rec, false, nil
	}
	if err := rec.Unmarshal(b); err != nil {
		return rec, false, fmt.Errorf("decode node operator %s: %w", id, err)
	}
	return rec, true, nil
}

func (v view) nodesOf(operator principal.Principal) ([]principal.Principal, error) {
	var out []principal.Principal
	for _, id := range v.ids("node_record_") {
		rec, _, err := v.node(id)
		if err != nil {
			return nil, err
		}
		if string(rec.NodeOperatorID) == string(operator.Bytes()) {
			out = append(out, id)
		}
	}
	return out, nil
}

func (v view) subnetOf(node principal.Principal) (principal.Principal, bool, error) {
	for _, s := range v.ids("subnet_record_") {
		rec, _, err := v.subnet(s)
		if err != nil {
			return principal.Principal{}, false, err
		}
		for _, m := range rec.Membership {
			if string(m) == string(node.Bytes()) {
				return s, true, nil
			}
		}
	}
	return principal.Principal{}, false, nil
}
