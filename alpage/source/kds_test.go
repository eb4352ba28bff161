package source

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"alpnib.dev/alpage/devnet"
)

func kdsOver(t *testing.T, chips map[string]string, limited ...string) *KDS {
	t.Helper()
	k, err := devnet.NewKDS(chips, limited)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	return NewKDS(srv.URL, nil)
}

func TestKDSVouchesForAChipUnderWhicheverProductLineKnowsIt(t *testing.T) {
	milan, genoa := bytes.Repeat([]byte{1}, 64), bytes.Repeat([]byte{2}, 64)
	k := kdsOver(t, map[string]string{hex.EncodeToString(milan): "Milan-B0", hex.EncodeToString(genoa): "Genoa-B1"})
	for chip, want := range map[string]string{string(milan): "Milan-B0", string(genoa): "Genoa-B1"} {
		v := k.Verify(context.Background(), []byte(chip))
		if !v.Verified || v.Product != want || v.Refused || v.Inconclusive {
			t.Errorf("verdict %+v, want verified %s", v, want)
		}
	}
}

func TestKDSRefusesAChipNoProductLineKnows(t *testing.T) {
	k := kdsOver(t, nil)
	v := k.Verify(context.Background(), bytes.Repeat([]byte{3}, 64))
	if !v.Refused || v.Verified || v.Inconclusive {
		t.Fatalf("verdict %+v", v)
	}
}

func TestARateLimitOrAnUnreachableKDSIsInconclusive(t *testing.T) {
	chip := bytes.Repeat([]byte{4}, 64)
	k := kdsOver(t, map[string]string{hex.EncodeToString(chip): "Turin-B0"}, hex.EncodeToString(chip))
	if v := k.Verify(context.Background(), chip); !v.Inconclusive || !strings.Contains(v.Reason, "429") {
		t.Fatalf("rate limited: %+v", v)
	}
	down := NewKDS("http://127.0.0.1:1", nil)
	if v := down.Verify(context.Background(), chip); !v.Inconclusive || v.Refused {
		t.Fatalf("unreachable: %+v", v)
	}
}

func TestAVCEKForAnotherChipIsARefusal(t *testing.T) {
	other := bytes.Repeat([]byte{5}, 64)
	real, err := devnet.NewKDS(map[string]string{hex.EncodeToString(other): "Milan-B0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A service that answers every chip with the other chip's VCEK.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/vcek/v1/Milan/" + hex.EncodeToString(other)
		real.ServeHTTP(w, r)
	}))
	defer srv.Close()
	v := NewKDS(srv.URL, nil).Verify(context.Background(), bytes.Repeat([]byte{6}, 64))
	if v.Verified || v.Inconclusive || !v.Refused || !strings.Contains(v.Reason, "names another chip") {
		t.Fatalf("verdict %+v", v)
	}
}
