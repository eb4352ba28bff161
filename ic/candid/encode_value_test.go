package candid

import (
	"bytes"
	"encoding/hex"
	"testing"

	"alpnib.dev/ic/internal/leb128"
)

const changeSubnetMembershipHex = "4449444c026d686c03ddd99b870300bd869d8b046888fe9fc80d000101000108aabbccddee01020301010a1114171a1d202326292c"

func TestEncodeValuesMatchesTheReferenceEncoderOnChangeSubnetMembership(t *testing.T) {
	typ := Record(
		NamedField("node_ids_add", Vec(Principal())),
		NamedField("subnet_id", Principal()),
		NamedField("node_ids_remove", Vec(Principal())),
	)
	v := RecordValue(
		FieldValue{ID: FieldHash("node_ids_add"), Value: VecValue()},
		FieldValue{ID: FieldHash("subnet_id"), Value: PrincipalValue(unhex(t, "aabbccddee010203"))},
		FieldValue{ID: FieldHash("node_ids_remove"), Value: VecValue(PrincipalValue(unhex(t, "1114171a1d202326292c")))},
	)
	got, err := EncodeValues(types(typ), vals(v))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != changeSubnetMembershipHex {
		t.Fatalf("got  %x\nwant %s", got, changeSubnetMembershipHex)
	}
	back, err := DecodeValues(got, types(typ))
	if err != nil {
		t.Fatal(err)
	}
	if !back[0].Equal(v) {
		t.Fatalf("round trip gave %v, want %v", back[0], v)
	}
}

func TestATypeTableIsPostOrderAndSharesIdenticalEntries(t *testing.T) {
	// record { a : opt vec nat; b : opt vec nat } built from distinct nodes:
	// vec nat first, then opt vec nat, then the record; one entry each.
	typ := Record(NamedField("a", Opt(Vec(Nat()))), NamedField("b", Opt(Vec(Nat()))))
	got, err := encodeHeader(types(typ))
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("DIDL\x03\x6d\x7d\x6e\x00\x6c\x02"), leb128.AppendSigned(leb128.AppendUnsigned(leb128.AppendSigned(leb128.AppendUnsigned(nil, uint64(FieldHash("a"))), 1), uint64(FieldHash("b"))), 1)...)
	want = append(want, 1, 2)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

func TestARecursiveTypeEncodesWithABackReference(t *testing.T) {
	l := listType()
	v := Some(RecordValue(FieldValue{ID: FieldHash("head"), Value: intV(1)}, FieldValue{ID: FieldHash("tail"), Value: None()}))
	got, err := EncodeValues(types(l), vals(v))
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeValues(got, types(l))
	if err != nil {
		t.Fatal(err)
	}
	if !back[0].Equal(v) {
		t.Fatalf("round trip gave %v", back[0])
	}
}
