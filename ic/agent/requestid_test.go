package agent

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"reflect"
	"testing"

	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// typed is one value of testdata/request_id.json (a copy of
// shared/conformance/request_id.json).
type typed struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

func (v typed) toGo(t *testing.T) any {
	t.Helper()
	switch v.Type {
	case "text":
		var s string
		mustJSON(t, v.Value, &s)
		return s
	case "blob":
		var s string
		mustJSON(t, v.Value, &s)
		return unhex(t, s)
	case "nat":
		var s string
		mustJSON(t, v.Value, &s)
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			t.Fatalf("bad nat %q", s)
		}
		if n.IsUint64() {
			return n.Uint64()
		}
		return n
	case "int":
		var s string
		mustJSON(t, v.Value, &s)
		n, ok := new(big.Int).SetString(s, 10)
		if !ok || !n.IsInt64() {
			t.Fatalf("bad int %q", s)
		}
		return n.Int64()
	case "array":
		var elems []typed
		mustJSON(t, v.Value, &elems)
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = e.toGo(t)
		}
		return out
	case "map":
		var fields map[string]typed
		mustJSON(t, v.Value, &fields)
		return fieldsToGo(t, fields)
	}
	t.Fatalf("unknown type %q", v.Type)
	return nil
}

func fieldsToGo(t *testing.T, fields map[string]typed) map[string]any {
	out := make(map[string]any, len(fields))
	for k, f := range fields {
		out[k] = f.toGo(t)
	}
	return out
}

// requestFromFields builds the typed Request the vector describes.
func requestFromFields(t *testing.T, f map[string]any) Request {
	t.Helper()
	r, err := requestFromMap(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type ridFile struct {
	LEB []struct {
		Nat  string `json:"nat"`
		Int  string `json:"int"`
		ULEB string `json:"uleb128_hex"`
		SLEB string `json:"sleb128_hex"`
	} `json:"leb128_examples"`
	Vectors []struct {
		Name     string           `json:"name"`
		Fields   map[string]typed `json:"fields"`
		Expected string           `json:"expected_request_id"`
	} `json:"vectors"`
	Signed struct {
		Seed      string `json:"signing_key_seed_hex"`
		Sender    string `json:"sender_principal_text"`
		Envelopes []struct {
			Name      string           `json:"name"`
			Content   map[string]typed `json:"content"`
			RequestID string           `json:"request_id"`
			Pubkey    string           `json:"sender_pubkey_hex"`
			Sig       string           `json:"sender_sig_hex"`
			CBOR      string           `json:"cbor_hex"`
		} `json:"envelopes"`
	} `json:"signed_envelopes"`
	Typical struct {
		CBOR      string `json:"cbor_hex"`
		ContentID string `json:"content_request_id"`
	} `json:"spec_typical_request_envelope"`
}

func loadRID(t testing.TB) ridFile {
	raw, err := os.ReadFile("testdata/request_id.json")
	if err != nil {
		t.Fatal(err)
	}
	var f ridFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 || len(f.Signed.Envelopes) == 0 {
		t.Fatal("no vectors")
	}
	return f
}

func mustJSON(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLEB128ExamplesFromTheSpec(t *testing.T) {
	for _, e := range loadRID(t).LEB {
		if e.Nat != "" {
			n, _ := new(big.Int).SetString(e.Nat, 10)
			if got := hex.EncodeToString(leb128.AppendUnsignedBig(nil, n)); got != e.ULEB {
				t.Errorf("uleb(%s) = %s, want %s", e.Nat, got, e.ULEB)
			}
		}
		if e.Int != "" {
			n, _ := new(big.Int).SetString(e.Int, 10)
			if got := hex.EncodeToString(leb128.AppendSigned(nil, n.Int64())); got != e.SLEB {
				t.Errorf("sleb(%s) = %s, want %s", e.Int, got, e.SLEB)
			}
		}
	}
}

func TestEveryRequestIDVectorHashesToItsExpectedID(t *testing.T) {
	for _, v := range loadRID(t).Vectors {
		t.Run(v.Name, func(t *testing.T) {
			m := fieldsToGo(t, v.Fields)
			rid, err := HashOfMap(m)
			if err != nil {
				t.Fatal(err)
			}
			if rid.String() != v.Expected {
				t.Errorf("HashOfMap = %s, want %s", rid, v.Expected)
			}
			// Full requests also hash the same through the typed fast path.
			if _, ok := m["sender"]; !ok {
				return
			}
			if _, ok := m["ingress_expiry"]; !ok {
				return
			}
			req := requestFromFields(t, m)
			if got := req.ID(); got.String() != v.Expected {
				t.Errorf("Request.ID = %s, want %s", got, v.Expected)
			}
		})
	}
}

func TestSignedEnvelopesMatchTheVectorsExactly(t *testing.T) {
	f := loadRID(t)
	id := identity.NewEd25519(ed25519.NewKeyFromSeed(unhex(t, f.Signed.Seed)))
	if id.Sender().String() != f.Signed.Sender {
		t.Fatalf("sender = %s", id.Sender())
	}
	for _, v := range f.Signed.Envelopes {
		t.Run(v.Name, func(t *testing.T) {
			req := requestFromFields(t, fieldsToGo(t, v.Content))
			var signer identity.Identity = id
			if req.Sender.IsAnonymous() {
				signer = identity.Anonymous{}
			}
			env, rid, err := Sign(signer, req)
			if err != nil {
				t.Fatal(err)
			}
			if rid.String() != v.RequestID {
				t.Errorf("request id = %s, want %s", rid, v.RequestID)
			}
			if hex.EncodeToString(env.SenderPubkey) != v.Pubkey || hex.EncodeToString(env.SenderSig) != v.Sig {
				t.Errorf("pubkey/sig = %x / %x, want %s / %s", env.SenderPubkey, env.SenderSig, v.Pubkey, v.Sig)
			}
			ours, err := env.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(ours[:3]) != "d9d9f7" {
				t.Errorf("envelope does not start with the self-describe tag: %x", ours[:3])
			}
			// Map order is free in CBOR: compare decoded values.
			var a, b any
			if err := cborx.Unmarshal(ours, &a); err != nil {
				t.Fatal(err)
			}
			if err := cborx.Unmarshal(unhex(t, v.CBOR), &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("envelope differs from the vector:\n ours %v\n want %v", a, b)
			}
			// And the vector's own bytes decode into an envelope that verifies.
			back, err := UnmarshalEnvelope(unhex(t, v.CBOR))
			if err != nil {
				t.Fatal(err)
			}
			if back.RequestID().String() != v.RequestID {
				t.Errorf("decoded request id = %s", back.RequestID())
			}
			if err := back.Verify(); err != nil {
				t.Errorf("decoded envelope does not verify: %v", err)
			}
		})
	}
}

func TestTheSpecsTypicalRequestDecodes(t *testing.T) {
	f := loadRID(t)
	// The typical request has no sender or ingress_expiry, so only the generic
	// content id applies.
	var env struct {
		Content map[string]any `cbor:"content"`
		Sig     []byte         `cbor:"sender_sig"`
	}
	if err := cborx.Unmarshal(unhex(t, f.Typical.CBOR), &env); err != nil {
		t.Fatal(err)
	}
	rid, err := HashOfMap(env.Content)
	if err != nil {
		t.Fatal(err)
	}
	if rid.String() != f.Typical.ContentID || hex.EncodeToString(env.Sig) != "deadbeef" {
		t.Errorf("content id = %s sig %x", rid, env.Sig)
	}
	if _, err := UnmarshalEnvelope(unhex(t, f.Typical.CBOR)); err == nil {
		t.Error("an envelope without sender and ingress_expiry was accepted")
	}
}

func TestATamperedEnvelopeDoesNotVerify(t *testing.T) {
	f := loadRID(t)
	id := identity.NewEd25519(ed25519.NewKeyFromSeed(unhex(t, f.Signed.Seed)))
	env, _, err := Sign(id, Request{Type: TypeCall, Sender: id.Sender(), IngressExpiry: 1, CanisterID: principal.CanisterID(1), MethodName: "m", Arg: []byte("DIDL\x00\x00")})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := env.Marshal()
	back, err := UnmarshalEnvelope(raw)
	if err != nil || back.Verify() != nil {
		t.Fatalf("round trip: %v / %v", err, back.Verify())
	}
	back.Content.MethodName = "n"
	back.contentID = nil
	if back.Verify() == nil {
		t.Error("changed method name still verifies")
	}
	other, _ := identity.GenerateEd25519(nil)
	env.SenderPubkey = other.PublicKeyDER()
	if env.Verify() == nil {
		t.Error("foreign public key accepted")
	}
}

func TestTheManagementCanisterIsAnEmptyBlobNotNull(t *testing.T) {
	env, _, err := Sign(identity.Anonymous{}, Request{Type: TypeQuery, Sender: principal.Anonymous, IngressExpiry: 5, CanisterID: principal.ManagementCanister, MethodName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := env.Marshal()
	back, err := UnmarshalEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Content.CanisterID.IsManagementCanister() || back.RequestID() != env.Content.ID() {
		t.Errorf("management canister round trip: %v %s", back.Content.CanisterID, back.RequestID())
	}
}

func BenchmarkRequestIDTyped(b *testing.B) {
	req := Request{Type: TypeCall, Sender: principal.Anonymous, IngressExpiry: 1685570400000000000,
		CanisterID: principal.CanisterID(1), MethodName: "get_proposal_info", Arg: make([]byte, 64), Nonce: make([]byte, 16)}
	b.ReportAllocs()
	for b.Loop() {
		_ = req.ID()
	}
}

func BenchmarkRequestIDGenericMap(b *testing.B) {
	m := map[string]any{"request_type": "call", "sender": []byte{4}, "ingress_expiry": uint64(1685570400000000000),
		"canister_id": principal.CanisterID(1).Bytes(), "method_name": "get_proposal_info", "arg": make([]byte, 64), "nonce": make([]byte, 16)}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = HashOfMap(m)
	}
}

func TestANatBeyond64BitsHashesAsLEB128(t *testing.T) {
	n, _ := new(big.Int).SetString("18446744073709551616", 10) // 2^64
	got, err := HashValue(*n)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02})
	if got != want {
		t.Errorf("hash = %x", got)
	}
	if _, err := HashValue(big.NewInt(-1)); err == nil {
		t.Error("negative *big.Int accepted as a nat")
	}
	if _, err := HashValue(3.5); err == nil {
		t.Error("float accepted")
	}
}
