package agent

import (
	"errors"
	"testing"
)

func withQuerySignatures(c *Config) { c.VerifyQuerySignatures = true }

func TestSignedQueryAnswersVerifyAgainstCertifiedNodeKeys(t *testing.T) {
	for _, rootSigned := range []bool{false, true} {
		f := newFakeReplica(t)
		f.signQueries, f.rootSigned = true, rootSigned
		a := newAgent(t, f, withQuerySignatures)
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
	for _, mode := range []string{"tamper", "stranger", "stale"} {
		f := newFakeReplica(t)
		f.signQueries, f.queryMode = true, mode
		_, err := newAgent(t, f, withQuerySignatures).Query(ctx(t), inRange, "echo", []byte("x"))
		if !errors.Is(err, ErrQuerySignature) {
			t.Errorf("%s: err = %v, want ErrQuerySignature", mode, err)
		}
	}
}

func TestAnUnsignedQueryAnswerIsRefusedOnlyWhenSignaturesAreRequired(t *testing.T) {
	f := newFakeReplica(t)
	if _, err := newAgent(t, f, withQuerySignatures).Query(ctx(t), inRange, "echo", nil); !errors.Is(err, ErrQuerySignature) {
		t.Errorf("err = %v, want ErrQuerySignature", err)
	}
	if _, err := newAgent(t, f).Query(ctx(t), inRange, "echo", nil); err != nil {
		t.Errorf("without the option: %v", err)
	}
}
