package principal

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// vectors mirrors testdata/principal.json, a copy of
// shared/conformance/principal.json.
type vectors struct {
	Valid []struct {
		Text string `json:"text"`
		Hex  string `json:"hex"`
	} `json:"valid"`
	CaseInsensitive []struct {
		Text      string `json:"text"`
		Hex       string `json:"hex"`
		Canonical string `json:"canonical_text"`
	} `json:"case_insensitive_input"`
	Invalid []struct {
		Text string `json:"text"`
		Why  string `json:"why"`
	} `json:"invalid"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/principal.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Valid) == 0 || len(v.Invalid) == 0 {
		t.Fatal("no vectors loaded")
	}
	return v
}

func TestEveryValidVectorRoundTripsBothWays(t *testing.T) {
	for _, v := range loadVectors(t).Valid {
		want, _ := hex.DecodeString(v.Hex)
		p, err := Decode(v.Text)
		if err != nil {
			t.Errorf("Decode(%q): %v", v.Text, err)
			continue
		}
		if !bytes.Equal(p.Bytes(), want) {
			t.Errorf("Decode(%q) = %x, want %x", v.Text, p.Bytes(), want)
		}
		q, err := FromBytes(want)
		if err != nil {
			t.Fatal(err)
		}
		if q.String() != v.Text {
			t.Errorf("FromBytes(%x).String() = %q, want %q", want, q.String(), v.Text)
		}
		if p != q {
			t.Errorf("decoded and constructed principals differ for %q", v.Text)
		}
	}
}

func TestUpperCaseTextIsAcceptedAndPrintedLowerCase(t *testing.T) {
	for _, v := range loadVectors(t).CaseInsensitive {
		p, err := Decode(v.Text)
		if err != nil {
			t.Errorf("Decode(%q): %v", v.Text, err)
			continue
		}
		if hex.EncodeToString(p.Bytes()) != v.Hex || p.String() != v.Canonical {
			t.Errorf("Decode(%q) = %x %q, want %s %q", v.Text, p.Bytes(), p, v.Hex, v.Canonical)
		}
	}
}

func TestEveryInvalidVectorIsRejected(t *testing.T) {
	for _, v := range loadVectors(t).Invalid {
		if p, err := Decode(v.Text); err == nil {
			t.Errorf("Decode(%q) = %x, want an error (%s)", v.Text, p.Bytes(), v.Why)
		}
	}
}

func TestErrorsSayWhichRuleWasBroken(t *testing.T) {
	cases := []struct {
		text string
		want error
	}{
		{"", ErrEmpty},
		{"Hello world!", ErrCharacter},
		{"0aaaa-aa", ErrCharacter},
		{"aaaaaaa", ErrGrouping},
		{"aaa-aaaa", ErrGrouping},
		{"rrkah--fqaaa-aaaaa-aaaaq-cai", ErrGrouping},
		{"aaaaaaa-", ErrGrouping},
		{"aaaaa-a", ErrBase32},
		{"aaaaa", ErrTooShort},
		{"aacd5-niaaa-aaaaa-aaaaa-aaaaa-aaaaa-aaaaa-aaaaa-aaaaa-aaaaa-aaaaa", ErrTooLong},
		{"2vxsx-fad", ErrChecksum},
		{"rrkah-fqaaa-aaaaa-aaaar-cai", ErrChecksum},
		{"aaaaa-ab", ErrNonCanonical},
	}
	for _, c := range cases {
		_, err := Decode(c.text)
		if !errors.Is(err, c.want) {
			t.Errorf("Decode(%q) error = %v, want %v", c.text, err, c.want)
		}
	}
}

func TestFromBytesRefusesMoreThan29Bytes(t *testing.T) {
	if _, err := FromBytes(make([]byte, 29)); err != nil {
		t.Fatal(err)
	}
	if _, err := FromBytes(make([]byte, 30)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("30 bytes: err = %v, want ErrTooLong", err)
	}
}

func TestWellKnownPrincipals(t *testing.T) {
	if ManagementCanister.String() != "aaaaa-aa" || !ManagementCanister.IsManagementCanister() {
		t.Errorf("management canister = %q", ManagementCanister)
	}
	if Anonymous.String() != "2vxsx-fae" || !Anonymous.IsAnonymous() {
		t.Errorf("anonymous = %q", Anonymous)
	}
	if MustDecode("2vxsx-fae") != Anonymous {
		t.Error("decoded anonymous is not == Anonymous")
	}
	if ManagementCanister.IsAnonymous() {
		t.Error("management canister claims to be anonymous")
	}
}

func TestSelfAuthenticatingOfTheEmptyKeyMatchesTheReference(t *testing.T) {
	p := SelfAuthenticating(nil)
	if p.String() != "o2x4y-ywrji-biykr-2fpeu-oyicx-muien-gecwr-lah4c-r2tcv-rnt4q-xqe" {
		t.Errorf("SelfAuthenticating([]) = %s", p)
	}
	if !p.IsSelfAuthenticating() {
		t.Error("IsSelfAuthenticating false")
	}
}

func TestCanisterIDsComeFromTheirIndex(t *testing.T) {
	cases := map[uint64]string{
		0: "rwlgt-iiaaa-aaaaa-aaaaa-cai", // registry
		1: "rrkah-fqaaa-aaaaa-aaaaq-cai", // governance
		2: "ryjl3-tyaaa-aaaaa-aaaba-cai", // ledger
		7: "rdmx6-jaaaa-aaaaa-aaadq-cai", // internet identity
	}
	for idx, text := range cases {
		p := CanisterID(idx)
		if p.String() != text {
			t.Errorf("CanisterID(%d) = %s, want %s", idx, p, text)
		}
		if got, ok := p.CanisterIndex(); !ok || got != idx {
			t.Errorf("CanisterIndex(%s) = %d, %v", p, got, ok)
		}
	}
	if _, ok := Anonymous.CanisterIndex(); ok {
		t.Error("anonymous has a canister index")
	}
}

func TestPrincipalsWorkAsMapKeysAndInJSON(t *testing.T) {
	m := map[Principal]int{MustDecode("rrkah-fqaaa-aaaaa-aaaaq-cai"): 1}
	if m[CanisterID(1)] != 1 {
		t.Fatal("map lookup by an equal principal failed")
	}
	type doc struct {
		ID Principal `json:"id"`
	}
	out, err := json.Marshal(doc{ID: CanisterID(1)})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"id":"rrkah-fqaaa-aaaaa-aaaaq-cai"}` {
		t.Errorf("json = %s", out)
	}
	var back doc
	if err := json.Unmarshal(out, &back); err != nil || back.ID != CanisterID(1) {
		t.Errorf("unmarshal = %v, %v", back.ID, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"2vxsx-fad"}`), &back); !errors.Is(err, ErrChecksum) {
		t.Errorf("bad checksum in JSON: err = %v", err)
	}
}

func TestCompareOrdersByRawBytes(t *testing.T) {
	a, b := CanisterID(1), CanisterID(2)
	if a.Compare(b) != -1 || b.Compare(a) != 1 || a.Compare(a) != 0 {
		t.Error("compare order wrong")
	}
}

func BenchmarkDecode(b *testing.B) {
	for b.Loop() {
		_, _ = Decode("tdb26-jop6k-aogll-7ltgs-eruif-6kk7m-qpktf-gdiqx-mxtrf-vb5e6-eqe")
	}
}

func BenchmarkString(b *testing.B) {
	p := MustDecode("tdb26-jop6k-aogll-7ltgs-eruif-6kk7m-qpktf-gdiqx-mxtrf-vb5e6-eqe")
	for b.Loop() {
		_ = p.String()
	}
}
