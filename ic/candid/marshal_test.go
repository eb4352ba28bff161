package candid

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"alpnib.dev/ic/principal"
)

type changeSubnetMembershipPayload struct {
	NodeIDsAdd    []principal.Principal `candid:"node_ids_add"`
	SubnetID      principal.Principal   `candid:"subnet_id"`
	NodeIDsRemove []principal.Principal `candid:"node_ids_remove"`
}

func TestMarshalMatchesTheReferenceEncoderOnChangeSubnetMembership(t *testing.T) {
	v := changeSubnetMembershipPayload{
		SubnetID:      principal.MustDecode("67htk-vfkxp-gn33q-baibq"),
		NodeIDsRemove: []principal.Principal{principal.MustDecode("5ffj3-jarcq-lruhj-aemtc-sla")},
	}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != changeSubnetMembershipHex {
		t.Fatalf("got  %x\nwant %s", got, changeSubnetMembershipHex)
	}
	// An empty and an absent vec encode the same; a pointer argument is
	// an opt, so encode the struct itself again.
	v.NodeIDsAdd = []principal.Principal{}
	again, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, got) {
		t.Fatalf("an empty vec encodes as %x, a nil one as %x", again, got)
	}
	var back changeSubnetMembershipPayload
	if err := Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.SubnetID != v.SubnetID || len(back.NodeIDsRemove) != 1 || back.NodeIDsRemove[0] != v.NodeIDsRemove[0] || len(back.NodeIDsAdd) != 0 {
		t.Fatalf("round trip gave %+v", back)
	}
}

func TestUnmarshalReadsTheProposalInfoWorkload(t *testing.T) {
	var info proposalInfo
	if err := Unmarshal(workload(t, "proposal_info.hex"), &info); err != nil {
		t.Fatal(err)
	}
	if info.ID == nil || info.ID.ID != 135000 {
		t.Errorf("id = %+v, want 135000", info.ID)
	}
	if info.Status != 4 || info.Topic != 7 {
		t.Errorf("status, topic = %d, %d, want 4, 7", info.Status, info.Topic)
	}
	if len(info.Ballots) != 200 {
		t.Errorf("%d ballots, want 200", len(info.Ballots))
	}
	if info.Proposal == nil || info.Proposal.Action == nil || info.Proposal.Action.ExecuteNnsFunction == nil ||
		info.Proposal.Action.ExecuteNnsFunction.NnsFunction != 31 {
		t.Fatalf("proposal action = %+v, want ExecuteNnsFunction 31", info.Proposal)
	}
	if n := len(info.Proposal.Action.ExecuteNnsFunction.Payload); n != 600 {
		t.Errorf("payload of %d bytes, want 600", n)
	}
	if info.Proposer == nil || info.Proposer.ID != 12838523358913392196 {
		t.Errorf("proposer = %+v, want 12838523358913392196", info.Proposer)
	}
}

func TestMarshalOfTheProposalInfoWorkloadDecodesToTheSameValues(t *testing.T) {
	data := workload(t, "proposal_info.hex")
	var info proposalInfo
	if err := Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	enc, err := Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	// The dynamic decoder sees the same values in both messages.
	_, a, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !a[0].Equal(b[0]) {
		t.Fatalf("re-encoded value differs:\n%v\n%v", a[0], b[0])
	}
	// Same type table order, same field order, same LEB128 forms: the
	// bytes are the workload's own.
	if !bytes.Equal(enc, data) {
		t.Fatalf("re-encoding changed the bytes (%d vs %d bytes)", len(enc), len(data))
	}
}

func TestUnmarshalReadsThePrincipalsWorkload(t *testing.T) {
	var ps []principal.Principal
	if err := Unmarshal(workload(t, "principals.hex"), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1000 {
		t.Fatalf("%d principals, want 1000", len(ps))
	}
	for _, p := range ps {
		if p.Len() != 29 {
			t.Fatalf("principal %s has %d bytes, want 29", p, p.Len())
		}
	}
	enc, err := Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, workload(t, "principals.hex")) {
		t.Fatalf("re-encoding the principals changed the bytes")
	}
}

func TestAVecOfPrincipalsInAnUncommonShapeStillDecodes(t *testing.T) {
	// Three principals; the second's length is an overlong LEB128, which
	// the fast path leaves to the general one.
	data := blob(t, `DIDL\01\6d\68\01\00\03\01\01\aa\01\82\00\bb\cc\01\00`)
	var ps []principal.Principal
	if err := Unmarshal(data, &ps); err != nil {
		t.Fatal(err)
	}
	want := []string{"aa", "bbcc", ""}
	for i, p := range ps {
		if got := hex.EncodeToString(p.Bytes()); got != want[i] {
			t.Errorf("principal %d = %s, want %s", i, got, want[i])
		}
	}
	// An opaque reference (flag 0) in the middle is an error at its offset.
	bad := blob(t, `DIDL\01\6d\68\01\00\02\01\01\aa\00\01\bb`)
	var de *DecodeError
	if err := Unmarshal(bad, &ps); !errors.As(err, &de) || de.Offset != 13 {
		t.Fatalf("got %v, want a DecodeError at offset 13", err)
	}
}
