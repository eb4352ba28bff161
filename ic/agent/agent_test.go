package agent

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/principal"
)

var (
	inRange    = principal.CanisterID(5)
	outOfRange = principal.CanisterID(500)
)

func newAgent(t *testing.T, f *fakeReplica, mutate ...func(*Config)) *Agent {
	t.Helper()
	id, err := identity.GenerateEd25519(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		URL:          f.srv.URL,
		Identity:     id,
		RootKey:      f.root.PublicKey().DER(),
		Now:          f.clock,
		PollInterval: 5 * time.Millisecond,
		Timeout:      5 * time.Second,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestTheStatusVectorDecodes(t *testing.T) {
	raw, err := os.ReadFile("testdata/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Vectors []struct {
			CBOR    string `json:"cbor_hex"`
			Decoded struct {
				RootKey struct {
					Hex string `json:"hex"`
				} `json:"root_key"`
				ImplVersion struct {
					Value string `json:"value"`
				} `json:"impl_version"`
				APIVersion struct {
					Value string `json:"value"`
				} `json:"ic_api_version"`
				Health struct {
					Value string `json:"value"`
				} `json:"replica_health_status"`
				Height struct {
					Value uint64 `json:"value"`
				} `json:"certified_height"`
			} `json:"decoded"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || len(f.Vectors) == 0 {
		t.Fatalf("vectors: %v", err)
	}
	for _, v := range f.Vectors {
		st, err := DecodeStatus(unhex(t, v.CBOR))
		if err != nil {
			t.Fatal(err)
		}
		d := v.Decoded
		if hex.EncodeToString(st.RootKey) != d.RootKey.Hex || st.ImplVersion != d.ImplVersion.Value ||
			st.ICAPIVersion != d.APIVersion.Value || st.ReplicaHealthStatus != d.Health.Value || st.CertifiedHeight != d.Height.Value {
			t.Errorf("status = %+v", st)
		}
		if _, err := certificate.ParsePublicKeyDER(st.RootKey); err != nil {
			t.Errorf("status root key: %v", err)
		}
	}
}

func TestStatusComesFromTheReplica(t *testing.T) {
	f := newFakeReplica(t)
	st, err := newAgent(t, f).Status(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.ImplVersion != "fake" || hex.EncodeToString(st.RootKey) != hex.EncodeToString(f.root.PublicKey().DER()) {
		t.Errorf("status = %+v", st)
	}
}

func TestAQueryReturnsTheReplyAndARejectIsTyped(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f)
	got, err := a.Query(ctx(t), inRange, "echo", []byte("DIDL\x00\x00"))
	if err != nil || string(got) != "DIDL\x00\x00" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	_, err = a.Query(ctx(t), inRange, "nope", nil)
	var re *RejectError
	if !errors.As(err, &re) || re.Code != CanisterReject || re.Message != "no thanks" || re.ErrorCode != "IC0406" {
		t.Fatalf("err = %v", err)
	}
	if re.Code.String() != "CANISTER_REJECT" {
		t.Errorf("code name %s", re.Code)
	}
}

func TestASynchronousCallReturnsTheCertifiedReply(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f)
	got, err := a.Call(ctx(t), inRange, "echo", []byte("hello"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("call = %q, %v", got, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, env := range f.seen {
		if env.Content.Type == TypeReadState {
			t.Error("a synchronous call polled read_state")
		}
	}
}

func TestACallThatRunsLongerIsPolledUntilReplied(t *testing.T) {
	f := newFakeReplica(t)
	got, err := newAgent(t, f).Call(ctx(t), inRange, "slow", []byte("later"))
	if err != nil || string(got) != "later" {
		t.Fatalf("call = %q, %v", got, err)
	}
	polls := 0
	for _, env := range f.seen {
		if env.Content.Type == TypeReadState {
			polls++
		}
	}
	if polls != 3 {
		t.Errorf("polled %d times, want 3", polls)
	}
}

func TestPollingSurvivesAnOverloadedBoundaryNode(t *testing.T) {
	f := newFakeReplica(t)
	f.failReads = 2
	got, err := newAgent(t, f).Call(ctx(t), inRange, "slow", []byte("eventually"))
	if err != nil || string(got) != "eventually" {
		t.Fatalf("call = %q, %v", got, err)
	}
}

func TestAnAgentIsSafeForConcurrentCalls(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			arg := []byte{byte(i)}
			got, err := a.Call(ctx(t), inRange, "slow", arg)
			if err == nil && string(got) != string(arg) {
				err = errors.New("reply of another call")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestAReplicaWithoutV3IsCalledThroughV2AndPolled(t *testing.T) {
	f := newFakeReplica(t)
	f.noV3 = true
	got, err := newAgent(t, f).Call(ctx(t), inRange, "echo", []byte("v2"))
	if err != nil || string(got) != "v2" {
		t.Fatalf("call = %q, %v", got, err)
	}
}

func TestACertifiedRejectionIsARejectError(t *testing.T) {
	f := newFakeReplica(t)
	_, err := newAgent(t, f).Call(ctx(t), inRange, "reject", nil)
	var re *RejectError
	if !errors.As(err, &re) || re.Code != CanisterReject || re.Message != "no thanks" || re.RequestID == nil {
		t.Fatalf("err = %v", err)
	}
}

func TestANonReplicatedRejectionIsARejectError(t *testing.T) {
	f := newFakeReplica(t)
	_, err := newAgent(t, f).Call(ctx(t), inRange, "nonrep", nil)
	var re *RejectError
	if !errors.As(err, &re) || re.Code != DestinationInvalid || re.ErrorCode != "IC0508" {
		t.Fatalf("err = %v", err)
	}
}

func TestACertificateUnderAnotherRootKeyIsRefused(t *testing.T) {
	f := newFakeReplica(t)
	other, _ := certificate.GenerateKey(nil)
	a := newAgent(t, f, func(c *Config) { c.RootKey = other.PublicKey().DER() })
	if _, err := a.Call(ctx(t), inRange, "echo", nil); !errors.Is(err, certificate.ErrDelegation) {
		t.Fatalf("err = %v, want ErrDelegation", err)
	}
}

func TestACertificateSignedWithTheWrongSubnetKeyIsRefused(t *testing.T) {
	f := newFakeReplica(t)
	f.signer, _ = certificate.GenerateKey(nil)
	if _, err := newAgent(t, f).Call(ctx(t), inRange, "echo", nil); !errors.Is(err, certificate.ErrSignature) {
		t.Fatalf("err = %v, want ErrSignature", err)
	}
}

func TestACanisterOutsideTheDelegationIsRefused(t *testing.T) {
	f := newFakeReplica(t)
	if _, err := newAgent(t, f).Call(ctx(t), outOfRange, "echo", nil); !errors.Is(err, certificate.ErrNotAuthorized) {
		t.Fatalf("err = %v, want ErrNotAuthorized", err)
	}
}

func TestAStaleCertificateIsRefused(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f, func(c *Config) { c.Now = func() time.Time { return f.now.Add(10 * time.Minute) } })
	if _, err := a.Call(ctx(t), inRange, "echo", nil); !errors.Is(err, certificate.ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
}

func TestTheContextDeadlineStopsPolling(t *testing.T) {
	f := newFakeReplica(t)
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newAgent(t, f).Call(c, inRange, "forever", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s to notice the deadline", time.Since(start))
	}
}

func TestTheRootKeyIsFetchedOnlyWhenAllowed(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f, func(c *Config) { c.RootKey = nil; c.FetchRootKey = true })
	if got, err := a.Call(ctx(t), inRange, "echo", []byte("x")); err != nil || string(got) != "x" {
		t.Fatalf("call with fetched root key = %q, %v", got, err)
	}
	key, err := a.RootKey(ctx(t))
	if err != nil || hex.EncodeToString(key) != hex.EncodeToString(f.root.PublicKey().DER()) {
		t.Errorf("root key %x, %v", key, err)
	}
	// Without permission the mainnet key stays, and the local replica's
	// certificates do not verify under it.
	b := newAgent(t, f, func(c *Config) { c.RootKey = nil })
	if err := b.FetchRootKey(ctx(t)); err == nil {
		t.Error("FetchRootKey allowed without FetchRootKey in the config")
	}
	if _, err := b.Call(ctx(t), inRange, "echo", nil); !errors.Is(err, certificate.ErrDelegation) {
		t.Errorf("local certificate under the mainnet key: err = %v", err)
	}
}

func TestRequestsAreSignedWithANonceAndExpireAFewMinutesAhead(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f)
	if _, err := a.Call(ctx(t), inRange, "echo", []byte("a")); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	env := f.seen[0]
	f.mu.Unlock()
	if env.Content.Sender != a.Sender() || env.SenderSig == nil {
		t.Errorf("sender %s sig %x", env.Content.Sender, env.SenderSig)
	}
	if len(env.Content.Nonce) != 16 {
		t.Errorf("nonce %x", env.Content.Nonce)
	}
	exp := time.Unix(0, int64(env.Content.IngressExpiry))
	if d := exp.Sub(f.now); d < 2*time.Minute || d > 5*time.Minute {
		t.Errorf("ingress expiry %s ahead", d)
	}
}

func TestTheAnonymousIdentitySendsUnsignedRequests(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f, func(c *Config) { c.Identity = nil })
	if _, err := a.Call(ctx(t), inRange, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if a.Sender() != principal.Anonymous || f.seen[0].SenderSig != nil {
		t.Errorf("anonymous request was signed")
	}
}

func TestAnHTTPErrorIsTyped(t *testing.T) {
	f := newFakeReplica(t)
	_, err := newAgent(t, f).Query(ctx(t), principal.Anonymous, "echo", nil)
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v", err)
	}
}

func TestReadStateReturnsAVerifiedCertificate(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f)
	cert, err := a.ReadState(ctx(t), inRange, [][][]byte{certificate.Path("time")})
	if err != nil {
		t.Fatal(err)
	}
	if at, err := cert.Time(); err != nil || !at.Equal(f.now) {
		t.Errorf("time = %s, %v", at, err)
	}
}

func TestABadURLIsRefused(t *testing.T) {
	for _, u := range []string{"", "icp-api.io", "ftp://x", "http://", "https:///", "https://a b"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
		if _, err := ParseURL(u); err == nil || !strings.Contains(err.Error(), "want http(s)://host[:port]") {
			t.Errorf("ParseURL(%q) = %v, want the refusal New gives", u, err)
		}
	}
}

func TestParseURLDropsTrailingSlashesAsNewDoes(t *testing.T) {
	u, err := ParseURL("https://icp-api.io//")
	if err != nil || u.String() != "https://icp-api.io" || u.Hostname() != "icp-api.io" {
		t.Fatalf("ParseURL = %v, %v", u, err)
	}
}
