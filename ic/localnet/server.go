package localnet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/principal"
)

// Limits a replica applies to ingress; the values are the replica's.
const (
	// MaxIngressExpiry is how far ahead ingress_expiry may lie (plus
	// PermittedDrift).
	MaxIngressExpiry = 5 * time.Minute
	// PermittedDrift is the clock skew tolerated on ingress_expiry.
	PermittedDrift = 60 * time.Second
	// MaxRequestBytes bounds a request body (the replica's ingress limit
	// plus envelope overhead).
	MaxRequestBytes = 5 << 20
	// ImplVersion is what /api/v2/status reports.
	ImplVersion = "alp-localnet"
)

// Server is a local replica. Create it with New; it is an http.Handler.
//
// It is one subnet, which is also the root subnet: its id is the
// self-authenticating principal of the root key, it serves every canister
// id, and it has one node, whose Ed25519 key signs query answers. The
// certified state tree holds /time, /request_status and /subnet/<id>
// (public_key, canister_ranges, node/<node>/public_key), so an agent can
// check query signatures against certified node keys.
type Server struct {
	key     *certificate.SecretKey
	subnet  principal.Principal
	node    *identity.Ed25519
	now     func() time.Time
	mux     *http.ServeMux
	timeout time.Duration

	mu        sync.Mutex
	canisters map[principal.Principal]Canister
	requests  map[agent.RequestID]*requestStatus
}

// requestStatus is an update call's entry in the state tree.
type requestStatus struct {
	sender  principal.Principal
	status  string // received, processing, replied, rejected
	reply   []byte
	reject  *Reject
	updated time.Time
}

// Options configure a Server.
type Options struct {
	// Now is the replica's clock; time.Now when nil.
	Now func() time.Time
	// CallTimeout bounds one canister call; 30s when zero.
	CallTimeout time.Duration
}

// New makes a replica with a fresh root key.
func New(opts Options) (*Server, error) {
	key, err := certificate.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("localnet: generate root key: %w", err)
	}
	node, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("localnet: generate node key: %w", err)
	}
	s := &Server{key: key, node: node, subnet: principal.SelfAuthenticating(key.PublicKey().DER()), now: opts.Now, timeout: opts.CallTimeout,
		canisters: map[principal.Principal]Canister{}, requests: map[agent.RequestID]*requestStatus{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.timeout == 0 {
		s.timeout = 30 * time.Second
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /api/v2/status", s.status)
	s.mux.HandleFunc("POST /api/v2/canister/{id}/query", s.query)
	s.mux.HandleFunc("POST /api/v3/canister/{id}/query", s.query)
	s.mux.HandleFunc("POST /api/v2/canister/{id}/call", s.callAsync)
	s.mux.HandleFunc("POST /api/v3/canister/{id}/call", s.callSync)
	s.mux.HandleFunc("POST /api/v2/canister/{id}/read_state", s.readState)
	s.mux.HandleFunc("POST /api/v3/canister/{id}/read_state", s.readState)
	return s, nil
}

// RootKeyDER is the DER-wrapped BLS public key that certifies every answer,
// as /api/v2/status serves it.
func (s *Server) RootKeyDER() []byte { return s.key.PublicKey().DER() }

// SubnetID is the replica's subnet (the root subnet).
func (s *Server) SubnetID() principal.Principal { return s.subnet }

// NodeID is the replica's one node, which signs query answers.
func (s *Server) NodeID() principal.Principal { return s.node.Sender() }

// Install hosts c under id, replacing any canister there.
func (s *Server) Install(id principal.Principal, c Canister) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canisters[id] = c
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	writeCBOR(w, http.StatusOK, map[string]any{
		"ic_api_version":        "0.18.0",
		"impl_version":          ImplVersion,
		"root_key":              s.RootKeyDER(),
		"replica_health_status": "healthy",
		"certified_height":      uint64(1),
	})
}

func writeCBOR(w http.ResponseWriter, code int, v any) {
	b, err := cborx.Marshal(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// badRequest answers a request the replica refuses to accept at all, with a
// plain-text reason as the replica does.
func badRequest(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, format, args...)
}

// envelope reads and validates a request of type want addressed to the
// canister in the URL. It writes the error response itself and returns nil
// when the request is refused.
func (s *Server) envelope(w http.ResponseWriter, r *http.Request, want agent.RequestType) (*agent.Envelope, principal.Principal) {
	var zero principal.Principal
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/cbor") {
		badRequest(w, http.StatusBadRequest, "Unexpected content-type, expected application/cbor, got %q", ct)
		return nil, zero
	}
	effective, err := principal.Decode(r.PathValue("id"))
	if err != nil {
		badRequest(w, http.StatusBadRequest, "Invalid effective canister id %q: %v", r.PathValue("id"), err)
		return nil, zero
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		badRequest(w, http.StatusBadRequest, "Failed to read body: %v", err)
		return nil, zero
	}
	if len(body) > MaxRequestBytes {
		badRequest(w, http.StatusRequestEntityTooLarge, "Request body is larger than %d bytes", MaxRequestBytes)
		return nil, zero
	}
	env, err := agent.UnmarshalEnvelope(body)
	if err != nil {
		badRequest(w, http.StatusBadRequest, "Could not parse body as %s request: %v", want, err)
		return nil, zero
	}
	c := env.Content
	if c.Type != want {
		badRequest(w, http.StatusBadRequest, "Expected a %s request, got request_type %q", want, c.Type)
		return nil, zero
	}
	if want != agent.TypeReadState && c.CanisterID != effective {
		badRequest(w, http.StatusBadRequest, "Specified CanisterId %s does not match effective canister id in URL %s", c.CanisterID, effective)
		return nil, zero
	}
	now := s.now()
	expiry := time.Unix(0, int64(c.IngressExpiry))
	if c.IngressExpiry > 1<<63-1 || expiry.Before(now.Add(-PermittedDrift)) || expiry.After(now.Add(MaxIngressExpiry+PermittedDrift)) {
		badRequest(w, http.StatusBadRequest, "Invalid request expiry: Specified ingress_expiry %d not within expected range: [%d, %d] (now %d)",
			c.IngressExpiry, now.Add(-PermittedDrift).UnixNano(), now.Add(MaxIngressExpiry+PermittedDrift).UnixNano(), now.UnixNano())
		return nil, zero
	}
	if err := env.Verify(); err != nil {
		rid := env.RequestID()
		badRequest(w, http.StatusBadRequest, "Failed to authenticate request 0x%s due to: %v", rid, err)
		return nil, zero
	}
	return env, effective
}

// dispatch runs a call on its canister, turning every failure into the
// reject a replica would give.
func (s *Server) dispatch(ctx context.Context, c Call, id principal.Principal) ([]byte, *Reject) {
	s.mu.Lock()
	can, ok := s.canisters[id]
	s.mu.Unlock()
	if !ok {
		return nil, &Reject{Code: DestinationInvalid, ErrorCode: "IC0301", Message: fmt.Sprintf("Canister %s not found", id)}
	}
	exists, query := can.Method(c.Method)
	switch {
	case !exists && c.Query:
		return nil, &Reject{Code: DestinationInvalid, ErrorCode: "IC0302", Message: fmt.Sprintf("Canister %s has no query method '%s'", id, c.Method)}
	case !exists:
		return nil, &Reject{Code: DestinationInvalid, ErrorCode: "IC0536", Message: fmt.Sprintf("Canister %s has no update method '%s'", id, c.Method)}
	case c.Query && !query:
		return nil, &Reject{Code: DestinationInvalid, ErrorCode: "IC0302", Message: fmt.Sprintf("Canister %s has no query method '%s'", id, c.Method)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	reply, err := can.Handle(ctx, c)
	if err != nil {
		var rej *Reject
		if errors.As(err, &rej) {
			return nil, rej
		}
		return nil, &Reject{Code: CanisterError, ErrorCode: "IC0503", Message: fmt.Sprintf("Error from Canister %s: Canister called `ic0.trap` with message: %v", id, err)}
	}
	return reply, nil
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	env, id := s.envelope(w, r, agent.TypeQuery)
	if env == nil {
		return
	}
	reply, rej := s.dispatch(r.Context(), Call{Caller: env.Content.Sender, Method: env.Content.MethodName, Arg: env.Content.Arg, Query: true}, id)
	resp := agent.QueryResponse{Status: agent.StatusReplied, Reply: &agent.QueryReply{Arg: reply}}
	if rej != nil {
		resp = agent.QueryResponse{Status: agent.StatusRejected, RejectCode: uint64(rej.Code), RejectMessage: rej.Message, ErrorCode: rej.ErrorCode}
	}
	// The node signs exactly what the agent's verifier hashes.
	if err := agent.SignQueryResponse(&resp, env.RequestID(), s.NodeID(), s.node, s.now()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeCBOR(w, http.StatusOK, &resp)
}

// execute runs an update call once per request id and records its status.
func (s *Server) execute(ctx context.Context, env *agent.Envelope, id principal.Principal) agent.RequestID {
	rid := env.RequestID()
	s.mu.Lock()
	if _, seen := s.requests[rid]; seen {
		s.mu.Unlock()
		return rid // a replayed request runs once
	}
	st := &requestStatus{sender: env.Content.Sender, status: "processing", updated: s.now()}
	s.requests[rid] = st
	s.forgetLocked()
	s.mu.Unlock()

	reply, rej := s.dispatch(ctx, Call{Caller: env.Content.Sender, Method: env.Content.MethodName, Arg: env.Content.Arg}, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	st.updated = s.now()
	if rej != nil {
		st.status, st.reject = "rejected", rej
	} else {
		st.status, st.reply = "replied", reply
	}
	return rid
}

func (s *Server) callAsync(w http.ResponseWriter, r *http.Request) {
	env, id := s.envelope(w, r, agent.TypeCall)
	if env == nil {
		return
	}
	// Detach from the request: the call runs to completion even if the
	// client stops waiting, as on a replica.
	go s.execute(context.WithoutCancel(r.Context()), env, id)
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) callSync(w http.ResponseWriter, r *http.Request) {
	env, id := s.envelope(w, r, agent.TypeCall)
	if env == nil {
		return
	}
	rid := s.execute(context.WithoutCancel(r.Context()), env, id)
	cert, err := s.certify([][][]byte{{[]byte("request_status"), rid[:]}, {[]byte("time")}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeCBOR(w, http.StatusOK, map[string]any{"status": "replied", "certificate": cert})
}

func (s *Server) readState(w http.ResponseWriter, r *http.Request) {
	env, _ := s.envelope(w, r, agent.TypeReadState)
	if env == nil {
		return
	}
	paths := env.Content.Paths
	s.mu.Lock()
	for _, p := range paths {
		if len(p) >= 2 && string(p[0]) == "request_status" && len(p[1]) == 32 {
			var rid agent.RequestID
			copy(rid[:], p[1])
			if st, ok := s.requests[rid]; ok && st.sender != env.Content.Sender {
				s.mu.Unlock()
				badRequest(w, http.StatusForbidden, "Request IDs must be for requests signed by the caller")
				return
			}
		}
	}
	s.mu.Unlock()
	cert, err := s.certify(append(paths, [][]byte{[]byte("time")}))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeCBOR(w, http.StatusOK, map[string]any{"certificate": cert})
}
