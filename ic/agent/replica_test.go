package agent

import (
	"bytes"
	"cmp"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// fakeReplica serves the IC HTTP interface on loopback with real BLS-signed
// certificates: a root key, a subnet key delegated for canisters 0..99, and
// one toy canister behaviour per method name:
//
//	echo     replies with its argument
//	reject   rejects with CANISTER_REJECT
//	slow     answers 202 and is processing for two polls, then replies
//	forever  answers 202 and never finishes
//	nonrep   is refused before consensus (non_replicated_rejection)
type fakeReplica struct {
	t        *testing.T
	root     *certificate.SecretKey
	subnet   *certificate.SecretKey
	subnetID principal.Principal
	// deleg is the delegation of the deprecated endpoints (ranges at
	// /subnet/<id>/canister_ranges), delegTree that of the current ones
	// (ranges at /canister_ranges/<id>).
	deleg, delegTree *certificate.Delegation
	now              time.Time
	// off lists the endpoints answered 404, such as "v4 call"; noV3 turns
	// off the synchronous calls (v4 and v3).
	off  map[string]bool
	noV3 bool
	hits map[string]int // endpoint ("v3 query") -> requests
	// failReads answers that many read_state requests with 503 first.
	failReads int
	// throttle answers that many requests of an endpoint ("v3 query")
	// with throttleStatus (429 when zero) and Retry-After: retryAfter.
	throttle       map[string]int
	throttleStatus int
	retryAfter     string
	// nodes sign query answers unless signQueries is cleared; queryMode spoils
	// them: "tamper" (reply changed after signing), "stranger" (signed by a
	// node the subnet does not list), "forged" (a listed node's name, another
	// key's signature), "stale" (signed ten minutes ago).
	nodes       []*identity.Ed25519
	signQueries bool
	queryMode   string
	// rootSigned certifies with the root key and no delegation, as the root
	// subnet does.
	rootSigned bool
	signer     *certificate.SecretKey // signs state; subnet key unless a test swaps it

	mu       sync.Mutex
	requests map[RequestID]*callState
	seen     []*Envelope
	srv      *httptest.Server
}

type callState struct {
	sender  principal.Principal
	method  string
	arg     []byte
	polls   int
	status  string
	reply   []byte
	code    uint64
	message string
}

func newFakeReplica(t *testing.T) *fakeReplica {
	t.Helper()
	root, err := certificate.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	subnet, err := certificate.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeReplica{
		t: t, root: root, subnet: subnet, signer: subnet,
		subnetID:    principal.SelfAuthenticating([]byte("fake subnet")),
		now:         time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC),
		requests:    map[RequestID]*callState{},
		signQueries: true,
		off:         map[string]bool{},
		throttle:    map[string]int{},
		hits:        map[string]int{},
	}
	ranges := []certificate.CanisterRange{{From: principal.CanisterID(0), To: principal.CanisterID(99)}}
	f.deleg, err = certificate.Delegate(root, f.subnetID, subnet.PublicKey(), ranges, f.now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.delegTree, err = certificate.DelegateIn(certificate.TreeRanges, root, f.subnetID, subnet.PublicKey(), ranges, f.now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		n, err := identity.GenerateEd25519(nil)
		if err != nil {
			t.Fatal(err)
		}
		f.nodes = append(f.nodes, n)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/status", f.status)
	for _, e := range []struct {
		version, verb, target string
		tree                  bool
		h                     func(http.ResponseWriter, *http.Request, *certificate.Delegation)
	}{
		{"v4", "call", "canister", true, f.callSync},
		{"v3", "call", "canister", false, f.callSync},
		{"v2", "call", "canister", false, f.callV2},
		{"v3", "query", "canister", true, f.query},
		{"v2", "query", "canister", false, f.query},
		{"v3", "read_state", "canister", true, f.readState},
		{"v2", "read_state", "canister", false, f.readState},
		{"v3", "read_state", "subnet", true, f.readState},
		{"v2", "read_state", "subnet", false, f.readState},
	} {
		name := e.version + " " + e.verb
		if e.target == "subnet" {
			name = e.version + " subnet " + e.verb
		}
		mux.HandleFunc("POST /api/"+e.version+"/"+e.target+"/{id}/"+e.verb, func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			f.hits[name]++
			off := f.off[name] || (f.noV3 && e.verb == "call" && e.version != "v2")
			throttled := f.throttle[name] > 0
			if throttled {
				f.throttle[name]--
			}
			f.mu.Unlock()
			if throttled {
				if f.retryAfter != "" {
					w.Header().Set("Retry-After", f.retryAfter)
				}
				http.Error(w, "rate limited", cmp.Or(f.throttleStatus, http.StatusTooManyRequests))
				return
			}
			if off {
				http.NotFound(w, r)
				return
			}
			d := f.deleg
			if e.tree {
				d = f.delegTree
			}
			e.h(w, r, d)
		})
	}
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeReplica) clock() time.Time { return f.now }

func (f *fakeReplica) status(w http.ResponseWriter, _ *http.Request) {
	body, _ := (&Status{RootKey: f.root.PublicKey().DER(), ImplVersion: "fake", ReplicaHealthStatus: "healthy"}).Marshal()
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(body)
}

// envelope reads and checks a request the way a replica must: signature,
// sender, request type, and that the effective canister exists.
func (f *fakeReplica) envelope(w http.ResponseWriter, r *http.Request, want RequestType) (*Envelope, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	env, err := UnmarshalEnvelope(data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	if err := env.Verify(); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return nil, false
	}
	if env.Content.Type != want {
		http.Error(w, "wrong request type "+string(env.Content.Type), http.StatusBadRequest)
		return nil, false
	}
	id, err := principal.Decode(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	if _, ok := id.CanisterIndex(); !ok && !strings.Contains(r.URL.Path, "/subnet/") {
		http.Error(w, "no such canister "+id.String(), http.StatusBadRequest)
		return nil, false
	}
	f.mu.Lock()
	f.seen = append(f.seen, env)
	f.mu.Unlock()
	return env, true
}

func writeCBOR(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// hitsOf is how many requests an endpoint ("v4 call") has had.
func (f *fakeReplica) hitsOf(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[name]
}

func (f *fakeReplica) query(w http.ResponseWriter, r *http.Request, _ *certificate.Delegation) {
	env, ok := f.envelope(w, r, TypeQuery)
	if !ok {
		return
	}
	var resp QueryResponse
	switch env.Content.MethodName {
	case "echo":
		resp = QueryResponse{Status: StatusReplied, Reply: &QueryReply{Arg: env.Content.Arg}}
	default:
		resp = QueryResponse{Status: StatusRejected, RejectCode: uint64(CanisterReject), RejectMessage: "no thanks", ErrorCode: "IC0406"}
	}
	if f.signQueries {
		node, key, at := f.nodes[1].Sender(), f.nodes[1], f.now
		switch f.queryMode {
		case "stranger":
			key, _ = identity.GenerateEd25519(nil)
			node = key.Sender()
		case "forged":
			key, _ = identity.GenerateEd25519(nil)
		case "stale":
			at = f.now.Add(-10 * time.Minute)
		}
		if err := SignQueryResponse(&resp, env.RequestID(), node, key, at); err != nil {
			f.t.Error(err)
		}
		if f.queryMode == "tamper" && resp.Reply != nil {
			resp.Reply.Arg = append(resp.Reply.Arg, '!')
		}
	}
	body, _ := resp.Marshal()
	writeCBOR(w, http.StatusOK, body)
}

// submit records a call and runs it as far as it goes without polling.
func (f *fakeReplica) submit(env *Envelope) (RequestID, *callState) {
	rid := env.RequestID()
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.requests[rid]; ok {
		return rid, s
	}
	s := &callState{sender: env.Content.Sender, method: env.Content.MethodName, arg: env.Content.Arg, status: "received"}
	switch s.method {
	case "echo":
		s.status, s.reply = "replied", s.arg
	case "reject":
		s.status, s.code, s.message = "rejected", uint64(CanisterReject), "no thanks"
	case "slow", "forever":
		s.status = "processing"
	}
	f.requests[rid] = s
	return rid, s
}

func (f *fakeReplica) callSync(w http.ResponseWriter, r *http.Request, d *certificate.Delegation) {
	env, ok := f.envelope(w, r, TypeCall)
	if !ok {
		return
	}
	if env.Content.MethodName == "nonrep" {
		body, _ := (&CallResponse{Status: StatusNonReplicatedRejection, RejectCode: uint64(DestinationInvalid),
			RejectMessage: "canister is stopped", ErrorCode: "IC0508"}).Marshal()
		writeCBOR(w, http.StatusOK, body)
		return
	}
	rid, s := f.submit(env)
	f.mu.Lock()
	finished := s.status == "replied" || s.status == "rejected"
	f.mu.Unlock()
	if !finished {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	cert := f.certify([][][]byte{{[]byte("request_status"), rid[:]}}, d)
	body, _ := (&CallResponse{Status: StatusReplied, Certificate: cert}).Marshal()
	writeCBOR(w, http.StatusOK, body)
}

func (f *fakeReplica) callV2(w http.ResponseWriter, r *http.Request, _ *certificate.Delegation) {
	env, ok := f.envelope(w, r, TypeCall)
	if !ok {
		return
	}
	f.submit(env)
	w.WriteHeader(http.StatusAccepted)
}

func (f *fakeReplica) readState(w http.ResponseWriter, r *http.Request, d *certificate.Delegation) {
	env, ok := f.envelope(w, r, TypeReadState)
	if !ok {
		return
	}
	f.mu.Lock()
	if f.failReads > 0 {
		f.failReads--
		f.mu.Unlock()
		http.Error(w, "boundary node overloaded", http.StatusServiceUnavailable)
		return
	}
	for _, p := range env.Content.Paths {
		if len(p) >= 2 && string(p[0]) == "request_status" {
			var rid RequestID
			copy(rid[:], p[1])
			if s, ok := f.requests[rid]; ok {
				if s.sender != env.Content.Sender {
					f.mu.Unlock()
					http.Error(w, "request_status of another sender", http.StatusForbidden)
					return
				}
				if s.method == "slow" && s.status == "processing" {
					if s.polls++; s.polls > 2 {
						s.status, s.reply = "replied", s.arg
					}
				}
			}
		}
	}
	f.mu.Unlock()
	body, _ := (&ReadStateResponse{Certificate: f.certify(env.Content.Paths, d)}).Marshal()
	writeCBOR(w, http.StatusOK, body)
}

// certify builds the state tree, prunes it to paths (plus /time, which a
// replica always includes) and signs it with the subnet key delegated by d.
func (f *fakeReplica) certify(paths [][][]byte, d *certificate.Delegation) []byte {
	b := certificate.NewBuilder()
	b.MustInsert(certificate.Path("time"), leb128.AppendUnsigned(nil, uint64(f.now.UnixNano())))
	f.mu.Lock()
	for rid, s := range f.requests {
		p := func(leaf string) [][]byte {
			return [][]byte{[]byte("request_status"), bytes.Clone(rid[:]), []byte(leaf)}
		}
		b.MustInsert(p("status"), []byte(s.status))
		switch s.status {
		case "replied":
			b.MustInsert(p("reply"), s.reply)
		case "rejected":
			b.MustInsert(p("reject_code"), leb128.AppendUnsigned(nil, s.code))
			b.MustInsert(p("reject_message"), []byte(s.message))
			b.MustInsert(p("error_code"), []byte("IC0406"))
		}
	}
	f.mu.Unlock()
	sid := f.subnetID.Bytes()
	if f.rootSigned {
		// The root subnet's id is its key's self-authenticating principal.
		sid = principal.SelfAuthenticating(f.root.PublicKey().DER()).Bytes()
	}
	for _, n := range f.nodes {
		b.MustInsert([][]byte{[]byte("subnet"), sid, []byte("node"), n.Sender().Bytes(), []byte("public_key")}, n.PublicKeyDER())
	}
	ranges, _ := certificate.EncodeRanges([]certificate.CanisterRange{{From: principal.CanisterID(0), To: principal.CanisterID(99)}})
	b.MustInsert([][]byte{[]byte("subnet"), sid, []byte("canister_ranges")}, ranges)
	other := principal.SelfAuthenticating([]byte("another subnet"))
	otherRanges, _ := certificate.EncodeRanges([]certificate.CanisterRange{{From: principal.CanisterID(100), To: principal.CanisterID(199)}})
	b.MustInsert([][]byte{[]byte("subnet"), other.Bytes(), []byte("canister_ranges")}, otherRanges)
	tree := certificate.Prune(b.Build(), append(paths, certificate.Path("time"))...)
	signer, deleg := f.signer, d
	if f.rootSigned {
		signer, deleg = f.root, nil
	}
	cert, err := certificate.Sign(signer, tree, deleg)
	if err != nil {
		f.t.Error(err)
	}
	raw, err := cert.Marshal()
	if err != nil {
		f.t.Error(err)
	}
	return raw
}
