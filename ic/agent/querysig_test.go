package agent

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"alpnib.dev/ic/certificate"
)

func TestSignedQueryAnswersVerifyAgainstCertifiedNodeKeys(t *testing.T) {
	for _, rootSigned := range []bool{false, true} {
		f := newFakeReplica(t)
		f.rootSigned = rootSigned
		a := newAgent(t, f)
		got, err := a.Query(ctx(t), inRange, "echo", []byte("signed"))
		if err != nil || string(got) != "signed" {
			t.Fatalf("root signed %v: echo = %q, %v", rootSigned, got, err)
		}
		// A signed rejection verifies too, and is still a rejection.
		_, err = a.Query(ctx(t), inRange, "nope", nil)
		var re *RejectError
		if !errors.As(err, &re) || re.Code != CanisterReject {
			t.Fatalf("root signed %v: reject = %v", rootSigned, err)
		}
		reads := 0
		for _, env := range f.seen {
			if env.Content.Type == TypeReadState {
				reads++
			}
		}
		if reads != 1 {
			t.Errorf("root signed %v: node keys read %d times, want once", rootSigned, reads)
		}
	}
}

func TestSpoiledQueryAnswersAreRefused(t *testing.T) {
	for _, mode := range []string{"tamper", "stranger", "forged", "stale"} {
		f := newFakeReplica(t)
		f.queryMode = mode
		_, err := newAgent(t, f).Query(ctx(t), inRange, "echo", []byte("x"))
		if !errors.Is(err, ErrQuerySignature) {
			t.Errorf("%s: err = %v, want ErrQuerySignature", mode, err)
		}
	}
}

func TestAnUnsignedQueryAnswerIsRefusedUnlessTheCallerSkipsTheCheck(t *testing.T) {
	f := newFakeReplica(t)
	f.signQueries = false
	if _, err := newAgent(t, f).Query(ctx(t), inRange, "echo", nil); !errors.Is(err, ErrQuerySignature) {
		t.Errorf("by default: err = %v, want ErrQuerySignature", err)
	}
	skip := func(c *Config) { c.SkipQuerySignatures = true }
	if _, err := newAgent(t, f, skip).Query(ctx(t), inRange, "echo", nil); err != nil {
		t.Errorf("with SkipQuerySignatures: %v", err)
	}
}

func TestAMainnetHostNeverTrustsAFetchedOrForeignRootKey(t *testing.T) {
	noDial := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the agent dialled")
		return nil, errors.New("no network in this test")
	})}
	foreign, err := certificate.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"https://icp-api.io", "https://ic0.app/", "https://rrkah-fqaaa-aaaaa-aaaaq-cai.ICP0.io:443", "https://icp-api.io."} {
		for name, cfg := range map[string]Config{
			"fetched": {URL: url, FetchRootKey: true, HTTPClient: noDial},
			"foreign": {URL: url, RootKey: foreign.PublicKey().DER(), HTTPClient: noDial},
		} {
			_, err := New(cfg)
			if !errors.Is(err, ErrMainnetRootKey) || !strings.Contains(err.Error(), "root key") {
				t.Errorf("%s with a %s root key: err = %v, want ErrMainnetRootKey", url, name, err)
			}
		}
		if _, err := New(Config{URL: url, HTTPClient: noDial}); err != nil {
			t.Errorf("%s with the mainnet key: %v", url, err)
		}
	}
	for _, url := range []string{"http://127.0.0.1:4943", "https://icp-api.io.example.org", "https://noticp0.io"} {
		if _, err := New(Config{URL: url, FetchRootKey: true, HTTPClient: noDial}); err != nil {
			t.Errorf("%s is not mainnet, yet: %v", url, err)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
