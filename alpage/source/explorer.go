package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// Explorer reads registry records from the registry explorer. Each record
// is served as its history: a JSON array of {key, version, value}
// mutations where the highest version wins and a null value is a deletion.
type Explorer struct{ c client }

// NewExplorer returns a client of the explorer at base; hc nil means
// http.DefaultClient.
func NewExplorer(base string, hc *http.Client) *Explorer {
	return &Explorer{c: newClient(base, hc)}
}

// Mutation is one entry of a record's history.
type Mutation struct {
	Key     string          `json:"key"`
	Version uint64          `json:"version"`
	Value   json.RawMessage `json:"value"`
}

// Deleted reports whether the mutation removed the record.
func (m Mutation) Deleted() bool {
	return len(m.Value) == 0 || string(m.Value) == "null"
}

// Latest is the mutation with the highest version; ok is false for an
// empty history.
func Latest(history []Mutation) (Mutation, bool) {
	var best Mutation
	ok := false
	for _, m := range history {
		if !ok || m.Version > best.Version {
			best, ok = m, true
		}
	}
	return best, ok
}

// Record reads key's newest value. found is false when the key was never
// written (404) or its newest mutation is a deletion.
func (e *Explorer) Record(ctx context.Context, key string) (value json.RawMessage, version uint64, found bool, err error) {
	var h []Mutation
	if err := e.c.getJSON(ctx, "/api/records/"+url.PathEscape(key), &h); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, 0, false, nil
		}
		return nil, 0, false, fmt.Errorf("registry explorer: %w", err)
	}
	m, ok := Latest(h)
	if !ok || m.Deleted() {
		return nil, m.Version, false, nil
	}
	return m.Value, m.Version, true, nil
}

// NodeRegistered reports whether node_record_<node> exists now.
func (e *Explorer) NodeRegistered(ctx context.Context, node string) (bool, error) {
	var h []Mutation
	if err := e.c.getJSON(ctx, "/api/records/nodes/"+url.PathEscape(node), &h); err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("registry explorer: %w", err)
	}
	m, ok := Latest(h)
	return ok && !m.Deleted(), nil
}

// OperatorNodes lists the ids of the nodes an operator owns; none is an
// empty list (the explorer answers 404).
func (e *Explorer) OperatorNodes(ctx context.Context, operator string) ([]string, error) {
	var ids []string
	if err := e.c.getJSON(ctx, "/api/records/node-operators/"+url.PathEscape(operator)+"/nodes", &ids); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("registry explorer: %w", err)
	}
	return ids, nil
}

// Elected reports whether replica_version_<id> exists now, which is what
// makes a version elected.
func (e *Explorer) Elected(ctx context.Context, versionID string) (bool, error) {
	_, _, found, err := e.Record(ctx, "replica_version_"+versionID)
	return found, err
}
