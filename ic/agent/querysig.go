package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/principal"
)

// Query answers come from a single node, outside consensus. Each carries
// node signatures: Ed25519 over
//
//	"\x0Bic-response" · hash_of_map({status, reply | reject_code, reject_message, error_code?,
//	                                 timestamp, request_id})
//
// by nodes whose keys the subnet certifies at /subnet/<subnet>/node/<node>/public_key
// (interface spec, "Request: Query call"). Unless Config.SkipQuerySignatures
// is set, the agent reads those keys through a verified read_state of /subnet for the
// canister, caches them per canister while fresh, and checks every signature.

// DomainResponse prefixes the response hash in a node's signature.
const DomainResponse = "\x0Bic-response"

// ErrQuerySignature: a query answer's node signatures are missing, unknown,
// stale or wrong.
var ErrQuerySignature = errors.New("query response signature does not verify")

// NodeSignature is one node's signature on a query answer.
type NodeSignature struct {
	Timestamp uint64 `cbor:"timestamp"`
	Signature []byte `cbor:"signature"`
	Identity  []byte `cbor:"identity"`
}

// ResponseHash is the hash a node signs for a query answer to request rid,
// at time timestamp (nanoseconds).
func ResponseHash(q *QueryResponse, rid RequestID, timestamp uint64) (RequestID, error) {
	m := map[string]any{
		"status":     q.Status,
		"timestamp":  timestamp,
		"request_id": rid[:],
	}
	switch q.Status {
	case StatusReplied:
		if q.Reply == nil {
			return RequestID{}, fmt.Errorf("%w: replied without reply", ErrMalformedResponse)
		}
		m["reply"] = map[string]any{"arg": q.Reply.Arg}
	case StatusRejected:
		m["reject_code"] = q.RejectCode
		m["reject_message"] = q.RejectMessage
		if q.ErrorCode != "" {
			m["error_code"] = q.ErrorCode
		}
	default:
		return RequestID{}, fmt.Errorf("%w: query status %q", ErrMalformedResponse, q.Status)
	}
	return HashOfMap(m)
}

// SignQueryResponse is the node side: it fills q.Signatures with one node's
// signature. A local replica uses it so agents can check its answers.
func SignQueryResponse(q *QueryResponse, rid RequestID, node principal.Principal, key identity.Identity, at time.Time) error {
	ts := uint64(at.UnixNano())
	h, err := ResponseHash(q, rid, ts)
	if err != nil {
		return err
	}
	sig, err := key.Sign(append([]byte(DomainResponse), h[:]...))
	if err != nil {
		return fmt.Errorf("sign query response: %w", err)
	}
	raw, err := marshalSignatures([]NodeSignature{{Timestamp: ts, Signature: sig, Identity: node.Bytes()}})
	if err != nil {
		return err
	}
	q.Signatures = raw
	return nil
}

// nodeKeys are the certified node keys of the subnet serving a canister.
type nodeKeys struct {
	subnet  principal.Principal
	keys    map[principal.Principal][]byte // node -> DER public key
	fetched time.Time
}

type nodeKeyCache struct {
	mu sync.Mutex
	m  map[principal.Principal]*nodeKeys // effective canister -> keys
}

// verifyQuerySignatures checks every node signature on q against certified
// node keys, fetching them (once more, if a node is unknown) as needed.
func (a *Agent) verifyQuerySignatures(ctx context.Context, effective principal.Principal, rid RequestID, q *QueryResponse) error {
	sigs, err := unmarshalSignatures(q.Signatures)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrQuerySignature, err)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: response carries no node signatures", ErrQuerySignature)
	}
	keys, err := a.nodeKeysFor(ctx, effective, false)
	if err != nil {
		return err
	}
	for _, s := range sigs {
		node, err := principal.FromBytes(s.Identity)
		if err != nil {
			return fmt.Errorf("%w: node identity: %v", ErrQuerySignature, err)
		}
		der, ok := keys.keys[node]
		if !ok {
			// Nodes join subnets; look once more before calling it forged.
			if keys, err = a.nodeKeysFor(ctx, effective, true); err != nil {
				return err
			}
			if der, ok = keys.keys[node]; !ok {
				return fmt.Errorf("%w: node %s is not in subnet %s", ErrQuerySignature, node, keys.subnet)
			}
		}
		at := time.Unix(0, int64(s.Timestamp))
		if d := a.cfg.Now().Sub(at); d > a.maxAge() || d < -a.maxAge() {
			return fmt.Errorf("%w: node %s signed at %s", ErrQuerySignature, node, at.UTC().Format(time.RFC3339))
		}
		h, err := ResponseHash(q, rid, s.Timestamp)
		if err != nil {
			return err
		}
		if err := identity.Verify(der, append([]byte(DomainResponse), h[:]...), s.Signature); err != nil {
			return fmt.Errorf("%w: node %s: %v", ErrQuerySignature, node, err)
		}
	}
	return nil
}

func (a *Agent) maxAge() time.Duration {
	if a.cfg.CertificateMaxAge != 0 {
		return a.cfg.CertificateMaxAge
	}
	return certificate.DefaultMaxAge
}

// nodeKeysFor returns the node keys of the subnet serving effective, from the
// cache while younger than the freshness window unless refresh is set.
func (a *Agent) nodeKeysFor(ctx context.Context, effective principal.Principal, refresh bool) (*nodeKeys, error) {
	a.nodes.mu.Lock()
	k, ok := a.nodes.m[effective]
	a.nodes.mu.Unlock()
	if ok && !refresh && a.cfg.Now().Sub(k.fetched) < a.maxAge() {
		return k, nil
	}
	cert, err := a.ReadState(ctx, effective, [][][]byte{certificate.Path("subnet")})
	if err != nil {
		return nil, fmt.Errorf("node keys for %s: %w", effective, err)
	}
	root, err := a.RootKey(ctx) // set: the read above verified under it
	if err != nil {
		return nil, fmt.Errorf("node keys for %s: %w", effective, err)
	}
	k, err = nodeKeysFromCertificate(cert, effective, root)
	if err != nil {
		return nil, fmt.Errorf("node keys for %s: %w", effective, err)
	}
	k.fetched = a.cfg.Now()
	a.nodes.mu.Lock()
	if a.nodes.m == nil {
		a.nodes.m = map[principal.Principal]*nodeKeys{}
	}
	a.nodes.m[effective] = k
	a.nodes.mu.Unlock()
	return k, nil
}

// nodeKeysFromCertificate finds the subnet serving effective in a verified
// /subnet certificate and reads its nodes' keys. With a delegation the
// subnet is the delegated one (the verifier has already checked its ranges);
// without one it is the root subnet, whose id is the self-authenticating
// principal of the root key (as dfinity/agent-rs fetch_subnet_by_canister
// takes it, docs/decisions.md), and whose certified canister ranges (either
// layout) must hold the canister.
func nodeKeysFromCertificate(cert *certificate.Certificate, effective principal.Principal, rootKeyDER []byte) (*nodeKeys, error) {
	subnetsTree, st := cert.Tree.Subtree([]byte("subnet"))
	if st != certificate.Found {
		return nil, fmt.Errorf("%w: /subnet is %s", ErrQuerySignature, st)
	}
	var subnet principal.Principal
	if cert.Delegation != nil {
		subnet = cert.Delegation.SubnetID
	} else {
		subnet = principal.SelfAuthenticating(rootKeyDER)
		ranges, err := certificate.SubnetRanges(cert.Tree, subnet.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%w: root subnet %s: %v", ErrQuerySignature, subnet, err)
		}
		if !slices.ContainsFunc(ranges, func(r certificate.CanisterRange) bool { return r.Contains(effective) }) {
			return nil, fmt.Errorf("%w: the root subnet %s does not list canister %s", ErrQuerySignature, subnet, effective)
		}
	}
	nodes, st := subnetsTree.Subtree(subnet.Bytes(), []byte("node"))
	if st != certificate.Found {
		return nil, fmt.Errorf("%w: /subnet/%s/node is %s", ErrQuerySignature, subnet, st)
	}
	k := &nodeKeys{subnet: subnet, keys: map[principal.Principal][]byte{}}
	for _, n := range nodes.Children() {
		id, err := principal.FromBytes(n.Label)
		if err != nil {
			return nil, fmt.Errorf("%w: node id: %v", ErrQuerySignature, err)
		}
		if der, st := n.Tree.Lookup([]byte("public_key")); st == certificate.Found {
			k.keys[id] = der
		}
	}
	if len(k.keys) == 0 {
		return nil, fmt.Errorf("%w: subnet %s certifies no node keys", ErrQuerySignature, subnet)
	}
	return k, nil
}

func marshalSignatures(sigs []NodeSignature) ([]byte, error) {
	raw, err := cborx.MarshalPlain(sigs)
	if err != nil {
		return nil, fmt.Errorf("encode node signatures: %w", err)
	}
	return raw, nil
}

func unmarshalSignatures(raw []byte) ([]NodeSignature, error) {
	if raw == nil {
		return nil, nil
	}
	var sigs []NodeSignature
	if err := cborx.Unmarshal(raw, &sigs); err != nil {
		return nil, err
	}
	return sigs, nil
}
