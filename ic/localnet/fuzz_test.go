package localnet

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
)

// FuzzRequestBodies posts arbitrary bytes to every endpoint: a replica must
// answer each with a status, never panic, and accept nothing unsigned by
// the sender it claims.
func FuzzRequestBodies(f *testing.F) {
	me := identity.Anonymous{}
	for _, typ := range []agent.RequestType{agent.TypeQuery, agent.TypeCall, agent.TypeReadState} {
		req := agent.Request{Type: typ, Sender: me.Sender(), IngressExpiry: uint64(time.Now().Add(time.Minute).UnixNano()),
			CanisterID: RegistryID, MethodName: "get_subnet", Paths: [][][]byte{{[]byte("time")}}}
		env, _, err := agent.Sign(me, req)
		if err != nil {
			f.Fatal(err)
		}
		b, err := env.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xd9, 0xd9, 0xf7, 0xa1, 0x67, 'c', 'o', 'n', 't', 'e', 'n', 't', 0xa0})
	f.Add([]byte("not cbor"))
	s, err := New(Options{CallTimeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	s.InstallNNS(registry.New(), governance.New(governance.Config{}, RegistryExecutor(registry.New())))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"query", "call", "read_state"} {
			for _, v := range []string{"v2", "v3"} {
				w := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodPost, "/api/"+v+"/canister/"+RegistryID.String()+"/"+path, bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/cbor")
				s.ServeHTTP(w, r)
				switch w.Code {
				case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
				default:
					t.Fatalf("%s %s: status %d: %s", v, path, w.Code, w.Body.String())
				}
			}
		}
	})
}
