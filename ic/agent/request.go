package agent

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// RequestType is the request_type field of a request's content.
type RequestType string

// The request types of the HTTP interface.
const (
	TypeCall      RequestType = "call"
	TypeQuery     RequestType = "query"
	TypeReadState RequestType = "read_state"
)

// Request is the content of an envelope. Which fields are sent depends on
// Type: call and query carry canister_id, method_name and arg; read_state
// carries paths. Nonce is sent only when non-nil.
type Request struct {
	Type          RequestType
	Sender        principal.Principal
	IngressExpiry uint64 // nanoseconds since the Unix epoch
	CanisterID    principal.Principal
	MethodName    string
	Arg           []byte
	Nonce         []byte
	Paths         [][][]byte
}

// DomainRequest prefixes the request id in the message a sender signs.
const DomainRequest = "\x0Aic-request"

// Field names, and their hashes precomputed for the request-id fast path.
var (
	keyRequestType   = keyHash("request_type")
	keySender        = keyHash("sender")
	keyIngressExpiry = keyHash("ingress_expiry")
	keyCanisterID    = keyHash("canister_id")
	keyMethodName    = keyHash("method_name")
	keyArg           = keyHash("arg")
	keyNonce         = keyHash("nonce")
	keyPaths         = keyHash("paths")
)

func keyHash(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func (r *Request) hasCallFields() bool { return r.Type != TypeReadState }

// ID is the request id: the hash of the content map. It is computed straight
// from the typed fields (no map, no reflection), which is what a client does
// for every request it sends.
func (r *Request) ID() RequestID {
	var buf [8][64]byte
	pairs := buf[:0]
	add := func(k, v [32]byte) {
		var p [64]byte
		copy(p[:32], k[:])
		copy(p[32:], v[:])
		pairs = append(pairs, p)
	}
	var leb [10]byte
	add(keyRequestType, sha256.Sum256([]byte(r.Type)))
	add(keySender, sha256.Sum256([]byte(r.Sender.Bytes())))
	add(keyIngressExpiry, sha256.Sum256(leb128.AppendUnsigned(leb[:0], r.IngressExpiry)))
	if r.hasCallFields() {
		add(keyCanisterID, sha256.Sum256(r.CanisterID.Bytes()))
		add(keyMethodName, sha256.Sum256([]byte(r.MethodName)))
		add(keyArg, sha256.Sum256(r.Arg))
	} else {
		h, _ := HashValue(r.paths())
		add(keyPaths, h)
	}
	if r.Nonce != nil {
		add(keyNonce, sha256.Sum256(r.Nonce))
	}
	return hashPairs(pairs)
}

func (r *Request) paths() [][][]byte {
	if r.Paths == nil {
		return [][][]byte{}
	}
	return r.Paths
}

// contentMap is the CBOR form of the content, with exactly the fields ID
// hashes.
func (r *Request) contentMap() map[string]any {
	m := map[string]any{
		"request_type":   string(r.Type),
		"sender":         r.Sender.Bytes(),
		"ingress_expiry": r.IngressExpiry,
	}
	if r.hasCallFields() {
		m["canister_id"] = r.CanisterID.Bytes()
		m["method_name"] = r.MethodName
		arg := r.Arg
		if arg == nil {
			arg = []byte{}
		}
		m["arg"] = arg
	} else {
		m["paths"] = r.paths()
	}
	if r.Nonce != nil {
		m["nonce"] = r.Nonce
	}
	return m
}

// Envelope is what goes over the wire: the content, and for a signed request
// the sender's DER public key and signature.
type Envelope struct {
	Content      Request
	SenderPubkey []byte
	SenderSig    []byte
	// SenderDelegation is kept verbatim when decoding; this package does not
	// create delegations.
	SenderDelegation cbor.RawMessage

	// contentID is set by Unmarshal: the id of the content map as received,
	// unknown fields included.
	contentID *RequestID
}

// Sign builds the envelope for req, signing "\x0Aic-request" || id with id
// unless it is anonymous (no public key), in which case the envelope carries
// no signature.
func Sign(id identity.Identity, req Request) (*Envelope, RequestID, error) {
	rid := req.ID()
	env := &Envelope{Content: req}
	if der := id.PublicKeyDER(); der != nil {
		sig, err := id.Sign(append([]byte(DomainRequest), rid[:]...))
		if err != nil {
			return nil, rid, fmt.Errorf("sign request %s: %w", rid, err)
		}
		env.SenderPubkey, env.SenderSig = der, sig
	}
	return env, rid, nil
}

// RequestID is the id of the content: as received when the envelope was
// decoded (unknown content fields count), otherwise computed from Content.
func (e *Envelope) RequestID() RequestID {
	if e.contentID != nil {
		return *e.contentID
	}
	return e.Content.ID()
}

// Marshal encodes the envelope as self-described CBOR.
func (e *Envelope) Marshal() ([]byte, error) {
	m := map[string]any{"content": e.Content.contentMap()}
	if e.SenderPubkey != nil {
		m["sender_pubkey"] = e.SenderPubkey
	}
	if e.SenderSig != nil {
		m["sender_sig"] = e.SenderSig
	}
	if e.SenderDelegation != nil {
		m["sender_delegation"] = e.SenderDelegation
	}
	b, err := cborx.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	return b, nil
}

// Verify checks the envelope's signature against its public key and that the
// sender is the public key's principal, as a replica would. An anonymous
// envelope must carry no key and no signature.
func (e *Envelope) Verify() error {
	if e.SenderDelegation != nil {
		return errors.New("verify envelope: sender delegations are not supported")
	}
	if e.Content.Sender.IsAnonymous() {
		if e.SenderPubkey != nil || e.SenderSig != nil {
			return errors.New("verify envelope: anonymous request carries a signature")
		}
		return nil
	}
	if e.SenderPubkey == nil || e.SenderSig == nil {
		return fmt.Errorf("verify envelope: request from %s is not signed", e.Content.Sender)
	}
	if principal.SelfAuthenticating(e.SenderPubkey) != e.Content.Sender {
		return fmt.Errorf("verify envelope: public key does not belong to sender %s", e.Content.Sender)
	}
	rid := e.RequestID()
	if err := identity.Verify(e.SenderPubkey, append([]byte(DomainRequest), rid[:]...), e.SenderSig); err != nil {
		return fmt.Errorf("verify envelope %s: %w", rid, err)
	}
	return nil
}

// UnmarshalEnvelope decodes a CBOR envelope (with or without the
// self-describe tag). The request id is computed from the content map as
// received, so fields this package does not know still count.
func UnmarshalEnvelope(data []byte) (*Envelope, error) {
	var raw struct {
		Content          cbor.RawMessage `cbor:"content"`
		SenderPubkey     []byte          `cbor:"sender_pubkey"`
		SenderSig        []byte          `cbor:"sender_sig"`
		SenderDelegation cbor.RawMessage `cbor:"sender_delegation"`
	}
	if err := cborx.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode envelope: %w", err)
	}
	if raw.Content == nil {
		return nil, errors.New("decode envelope: no content")
	}
	var generic map[string]any
	if err := cborx.Unmarshal(raw.Content, &generic); err != nil {
		return nil, fmt.Errorf("decode envelope content: %w", err)
	}
	rid, err := HashOfMap(generic)
	if err != nil {
		return nil, fmt.Errorf("decode envelope content: %w", err)
	}
	req, err := requestFromMap(generic)
	if err != nil {
		return nil, fmt.Errorf("decode envelope content: %w", err)
	}
	return &Envelope{
		Content:          req,
		SenderPubkey:     raw.SenderPubkey,
		SenderSig:        raw.SenderSig,
		SenderDelegation: raw.SenderDelegation,
		contentID:        &rid,
	}, nil
}

func requestFromMap(m map[string]any) (Request, error) {
	var r Request
	t, ok := m["request_type"].(string)
	if !ok {
		return r, errors.New("request_type missing or not text")
	}
	r.Type = RequestType(t)
	switch r.Type {
	case TypeCall, TypeQuery, TypeReadState:
	default:
		return r, fmt.Errorf("unknown request_type %q", t)
	}
	var err error
	if r.Sender, err = principalField(m, "sender"); err != nil {
		return r, err
	}
	exp, ok := m["ingress_expiry"].(uint64)
	if !ok {
		return r, errors.New("ingress_expiry missing or not a nat")
	}
	r.IngressExpiry = exp
	if n, ok := m["nonce"]; ok {
		if r.Nonce, ok = n.([]byte); !ok {
			return r, errors.New("nonce is not a blob")
		}
	}
	if r.Type == TypeReadState {
		raw, ok := m["paths"].([]any)
		if !ok {
			return r, errors.New("paths missing or not an array")
		}
		r.Paths = make([][][]byte, len(raw))
		for i, p := range raw {
			labels, ok := p.([]any)
			if !ok {
				return r, fmt.Errorf("path %d is not an array", i)
			}
			r.Paths[i] = make([][]byte, len(labels))
			for j, l := range labels {
				if r.Paths[i][j], ok = l.([]byte); !ok {
					return r, fmt.Errorf("path %d label %d is not a blob", i, j)
				}
			}
		}
		return r, nil
	}
	if r.CanisterID, err = principalField(m, "canister_id"); err != nil {
		return r, err
	}
	if r.MethodName, ok = m["method_name"].(string); !ok {
		return r, errors.New("method_name missing or not text")
	}
	if r.Arg, ok = m["arg"].([]byte); !ok {
		return r, errors.New("arg missing or not a blob")
	}
	return r, nil
}

func principalField(m map[string]any, name string) (principal.Principal, error) {
	b, ok := m[name].([]byte)
	if !ok {
		return principal.Principal{}, fmt.Errorf("%s missing or not a blob", name)
	}
	p, err := principal.FromBytes(b)
	if err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}
