package agent

import (
	"bytes"
	"testing"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/cborx"
)

// FuzzEnvelope feeds arbitrary bytes to every CBOR decoder of the HTTP
// interface: request envelopes, certificates, hash trees and response bodies.
// None may panic, and whatever decodes must survive being used. The seed
// corpus in testdata/fuzz/FuzzEnvelope holds the conformance vectors' real
// envelopes, certificates, trees and status body. Run it with
//
//	go test ./ic/agent -run '^$' -fuzz FuzzEnvelope -fuzztime 60s
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte{0xd9, 0xd9, 0xf7, 0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		if env, err := UnmarshalEnvelope(data); err == nil {
			_ = env.RequestID()
			_ = env.Verify()
			if _, err := env.Marshal(); err != nil {
				t.Errorf("a decoded envelope does not encode: %v", err)
			}
		}
		if c, err := certificate.Decode(data); err == nil {
			_, _ = c.Time()
			_ = c.SignedMessage()
			_, _ = c.Tree.LookupString("request_status")
			if _, err := c.Marshal(); err != nil {
				t.Errorf("a decoded certificate does not encode: %v", err)
			}
		}
		if tree, err := certificate.DecodeTree(data); err == nil {
			enc, _ := tree.MarshalCBOR()
			again, err := certificate.DecodeTree(enc)
			if err != nil {
				t.Fatalf("re-encoded tree does not decode: %v", err)
			}
			if again.Digest() != tree.Digest() {
				t.Fatal("re-encoding changed the digest")
			}
			pruned := certificate.Prune(tree, certificate.Path("time"))
			if pruned.Digest() != tree.Digest() {
				t.Fatal("pruning changed the digest")
			}
			enc2, _ := again.MarshalCBOR()
			if !bytes.Equal(enc, enc2) {
				t.Fatal("encoding is not stable")
			}
		}
		_, _ = DecodeStatus(data)
		var q QueryResponse
		_ = cborx.Unmarshal(data, &q)
		var c CallResponse
		_ = cborx.Unmarshal(data, &c)
	})
}
