package localnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/certificate"
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
// id, and it has one node, whose Ed25519 key signs query answers; or, with
// Options.Subnets 2, that root subnet for the first 2^20 canister ids and a
// second, delegated subnet for the rest (subnets.go). The certified state
// tree holds /time, /request_status, /subnet/<id> (public_key,
// canister_ranges, node/<node>/public_key) and /canister_ranges/<id>, so an
// agent can check query signatures against certified node keys.
type Server struct {
	subnets []*subnet // the root subnet first
	now     func() time.Time
	mux     *http.ServeMux
	timeout time.Duration

	mu        sync.Mutex
	canisters map[principal.Principal]Canister
	requests  map[agent.RequestID]*requestStatus
}

// requestStatus is an update call's entry in the state tree of the subnet
// that ran it.
type requestStatus struct {
	sender    principal.Principal
	effective principal.Principal // the effective canister id of the call
	subnet    *subnet
	status    string // received, processing, replied, rejected
	reply     []byte
	reject    *Reject
	updated   time.Time
}

// Options configure a Server.
type Options struct {
	// Now is the replica's clock; time.Now when nil.
	Now func() time.Time
	// CallTimeout bounds one canister call; 30s when zero.
	CallTimeout time.Duration
	// Subnets is 1 (when zero) or 2: the root subnet alone, or the root
	// subnet for canister ids up to RootSubnetLastCanister and a delegated
	// subnet for the rest.
	Subnets int
}

// APIVersion is the interface specification version whose HTTP interface
// the server implements, as /api/v2/status reports it (docs/devnet.md).
const APIVersion = "0.67.0"

// New makes a replica with a fresh root key.
func New(opts Options) (*Server, error) {
	s := &Server{now: opts.Now, timeout: opts.CallTimeout,
		canisters: map[principal.Principal]Canister{}, requests: map[agent.RequestID]*requestStatus{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.timeout == 0 {
		s.timeout = 30 * time.Second
	}
	if opts.Subnets == 0 {
		opts.Subnets = 1
	}
	if err := s.newSubnets(opts.Subnets); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /api/v2/status", s.status)
	s.mux.HandleFunc("POST /api/v2/canister/{id}/query", s.query)
	s.mux.HandleFunc("POST /api/v3/canister/{id}/query", s.query)
	s.mux.HandleFunc("POST /api/v3/subnet/{id}/query", s.subnetQuery)
	s.mux.HandleFunc("POST /api/v2/canister/{id}/call", s.callAsync)
	s.mux.HandleFunc("POST /api/v3/canister/{id}/call", s.callSync(certificate.FlatRanges))
	s.mux.HandleFunc("POST /api/v4/canister/{id}/call", s.callSync(certificate.TreeRanges))
	s.mux.HandleFunc("POST /api/v2/canister/{id}/read_state", s.readState(readScope{}))
	s.mux.HandleFunc("POST /api/v3/canister/{id}/read_state", s.readState(readScope{v3: true}))
	s.mux.HandleFunc("POST /api/v2/subnet/{id}/read_state", s.readState(readScope{subnet: true}))
	s.mux.HandleFunc("POST /api/v3/subnet/{id}/read_state", s.readState(readScope{v3: true, subnet: true}))
	return s, nil
}

// RootKeyDER is the DER-wrapped BLS public key that certifies every answer,
// as /api/v2/status serves it.
func (s *Server) RootKeyDER() []byte { return s.subnets[0].key.PublicKey().DER() }

// SubnetID is the root subnet.
func (s *Server) SubnetID() principal.Principal { return s.subnets[0].id }

// NodeID is the root subnet's one node, which signs its query answers.
func (s *Server) NodeID() principal.Principal { return s.subnets[0].node.Sender() }

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
		"ic_api_version":        APIVersion,
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
// canister (or, at a subnet endpoint, the subnet) in the URL. It writes the
// error response itself and returns nil when the request is refused; the
// subnet is the one answering.
func (s *Server) envelope(w http.ResponseWriter, r *http.Request, want agent.RequestType, subnetScoped bool) (*agent.Envelope, principal.Principal, *subnet) {
	var zero principal.Principal
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/cbor") {
		badRequest(w, http.StatusBadRequest, "Unexpected content-type, expected application/cbor, got %q", ct)
		return nil, zero, nil
	}
	effective, err := principal.Decode(r.PathValue("id"))
	if err != nil {
		what := "canister"
		if subnetScoped {
			what = "subnet"
		}
		badRequest(w, http.StatusBadRequest, "Invalid effective %s id %q: %v", what, r.PathValue("id"), err)
		return nil, zero, nil
	}
	var by *subnet
	if subnetScoped {
		if by = s.subnetByID(effective); by == nil {
			badRequest(w, http.StatusBadRequest, "Subnet %s not found", effective)
			return nil, zero, nil
		}
	} else if by = s.subnetOf(effective); by == nil {
		badRequest(w, http.StatusBadRequest, "Canister %s is not in the canister ranges of any subnet", effective)
		return nil, zero, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		badRequest(w, http.StatusBadRequest, "Failed to read body: %v", err)
		return nil, zero, nil
	}
	if len(body) > MaxRequestBytes {
		badRequest(w, http.StatusRequestEntityTooLarge, "Request body is larger than %d bytes", MaxRequestBytes)
		return nil, zero, nil
	}
	env, err := agent.UnmarshalEnvelope(body)
	if err != nil {
		badRequest(w, http.StatusBadRequest, "Could not parse body as %s request: %v", want, err)
		return nil, zero, nil
	}
	c := env.Content
	if c.Type != want {
		badRequest(w, http.StatusBadRequest, "Expected a %s request, got request_type %q", want, c.Type)
		return nil, zero, nil
	}
	if want != agent.TypeReadState && !subnetScoped && c.CanisterID != effective {
		badRequest(w, http.StatusBadRequest, "Specified CanisterId %s does not match effective canister id in URL %s", c.CanisterID, effective)
		return nil, zero, nil
	}
	now := s.now()
	expiry := time.Unix(0, int64(c.IngressExpiry))
	if c.IngressExpiry > 1<<63-1 || expiry.Before(now.Add(-PermittedDrift)) || expiry.After(now.Add(MaxIngressExpiry+PermittedDrift)) {
		badRequest(w, http.StatusBadRequest, "Invalid request expiry: Specified ingress_expiry %d not within expected range: [%d, %d] (now %d)",
			c.IngressExpiry, now.Add(-PermittedDrift).UnixNano(), now.Add(MaxIngressExpiry+PermittedDrift).UnixNano(), now.UnixNano())
		return nil, zero, nil
	}
	if err := env.Verify(); err != nil {
		rid := env.RequestID()
		badRequest(w, http.StatusBadRequest, "Failed to authenticate request 0x%s due to: %v", rid, err)
		return nil, zero, nil
	}
	return env, effective, by
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
	env, id, by := s.envelope(w, r, agent.TypeQuery, false)
	if env == nil {
		return
	}
	reply, rej := s.dispatch(r.Context(), Call{Caller: env.Content.Sender, Method: env.Content.MethodName, Arg: env.Content.Arg, Query: true}, id)
	s.answerQuery(w, env, by, reply, rej)
}

// subnetQuery is /api/v3/subnet/<id>/query, which the spec reserves for the
// management canister's list_canisters, a subnet admin's call. This local
// network has no subnet admins, so it is always refused.
func (s *Server) subnetQuery(w http.ResponseWriter, r *http.Request) {
	env, _, by := s.envelope(w, r, agent.TypeQuery, true)
	if env == nil {
		return
	}
	if len(env.Content.CanisterID.Bytes()) != 0 || env.Content.MethodName != "list_canisters" {
		badRequest(w, http.StatusBadRequest, "The subnet query endpoint only serves the management canister's list_canisters, not %s.%s",
			env.Content.CanisterID, env.Content.MethodName)
		return
	}
	s.answerQuery(w, env, by, nil, &Reject{Code: CanisterReject, ErrorCode: "IC0406",
		Message: fmt.Sprintf("Only subnet admins may list the canisters of subnet %s, and it has none", by.id)})
}

// answerQuery writes a query's reply or reject, signed by the answering
// subnet's node over exactly what the agent's verifier hashes.
func (s *Server) answerQuery(w http.ResponseWriter, env *agent.Envelope, by *subnet, reply []byte, rej *Reject) {
	resp := agent.QueryResponse{Status: agent.StatusReplied, Reply: &agent.QueryReply{Arg: reply}}
	if rej != nil {
		resp = agent.QueryResponse{Status: agent.StatusRejected, RejectCode: uint64(rej.Code), RejectMessage: rej.Message, ErrorCode: rej.ErrorCode}
	}
	if err := agent.SignQueryResponse(&resp, env.RequestID(), by.node.Sender(), by.node, s.now()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeCBOR(w, http.StatusOK, &resp)
}

// execute runs an update call once per request id and records its status.
func (s *Server) execute(ctx context.Context, env *agent.Envelope, id principal.Principal, by *subnet) agent.RequestID {
	rid := env.RequestID()
	s.mu.Lock()
	if _, seen := s.requests[rid]; seen {
		s.mu.Unlock()
		return rid // a replayed request runs once
	}
	st := &requestStatus{sender: env.Content.Sender, effective: id, subnet: by, status: "processing", updated: s.now()}
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
	env, id, by := s.envelope(w, r, agent.TypeCall, false)
	if env == nil {
		return
	}
	// Detach from the request: the call runs to completion even if the
	// client stops waiting, as on a replica.
	go s.execute(context.WithoutCancel(r.Context()), env, id, by)
	w.WriteHeader(http.StatusAccepted)
}

// callSync is the synchronous call: v3 certifies its answer with the
// delegation's ranges at /subnet/<id>/canister_ranges, v4 under
// /canister_ranges/<id>.
func (s *Server) callSync(layout certificate.RangesLayout) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		env, id, by := s.envelope(w, r, agent.TypeCall, false)
		if env == nil {
			return
		}
		rid := s.execute(context.WithoutCancel(r.Context()), env, id, by)
		cert, err := s.certify(by, by.delegation(layout), [][][]byte{{[]byte("request_status"), rid[:]}, {[]byte("time")}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeCBOR(w, http.StatusOK, map[string]any{"status": "replied", "certificate": cert})
	}
}

// readState answers a read_state at one endpoint: the paths the spec lets
// it reveal, certified by the subnet answering, with the delegation in the
// layout of that endpoint's version.
func (s *Server) readState(rs readScope) http.HandlerFunc {
	layout := certificate.FlatRanges
	if rs.v3 {
		layout = certificate.TreeRanges
	}
	return func(w http.ResponseWriter, r *http.Request) {
		env, effective, by := s.envelope(w, r, agent.TypeReadState, rs.subnet)
		if env == nil {
			return
		}
		rs := rs
		rs.by = by
		if code, msg := s.mayReadRequestStatus(env, rs, effective); code != 0 {
			badRequest(w, code, "%s", msg)
			return
		}
		paths, err := s.paths(rs, env.Content.Paths)
		if err != nil {
			badRequest(w, http.StatusBadRequest, "Invalid read_state path: %v", err)
			return
		}
		cert, err := s.certify(by, by.delegation(layout), append(paths, [][]byte{[]byte("time")}))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeCBOR(w, http.StatusOK, map[string]any{"certificate": cert})
	}
}

// mayReadRequestStatus applies the spec's rule for /request_status/<id>
// paths: they may be read when the request is unknown, or when the read is
// signed by the request's sender and sent to the request's effective
// canister id (a canister endpoint) or effective subnet id (a subnet
// endpoint; no call here has one). It returns the refusal's status and
// message, or 0.
func (s *Server) mayReadRequestStatus(env *agent.Envelope, rs readScope, effective principal.Principal) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range env.Content.Paths {
		if len(p) < 2 || string(p[0]) != "request_status" || len(p[1]) != 32 {
			continue
		}
		var rid agent.RequestID
		copy(rid[:], p[1])
		st, ok := s.requests[rid]
		switch {
		case !ok:
		case st.sender != env.Content.Sender:
			return http.StatusForbidden, "Request IDs must be for requests signed by the caller"
		case rs.subnet:
			return http.StatusForbidden, fmt.Sprintf("Request 0x%s was sent to canister %s, not to subnet %s", rid, st.effective, effective)
		case st.effective != effective:
			return http.StatusForbidden, fmt.Sprintf("Request 0x%s was sent to canister %s, not to %s in the URL", rid, st.effective, effective)
		}
	}
	return 0, ""
}
