package nns

import (
	"encoding/hex"
	"testing"
)

// Encoded by protoc 3.21.12 (Debian protobuf-compiler), not by this
// project: `protoc --encode=hostos.NodeRecord node.proto < node.txt` in
// testdata/hostos, a node record of dfinity/ic's registry.node.v1 fields
// node_operator_id (15) and hostos_version_id (17).
const hostosNodeHex = "7a030102038a012836386536653262346534613166623763306330653866336230613463326436653166396138623763"

func TestANodeRecordsHostOSVersionDecodesFromProtocBytesAndEncodesBackTheSame(t *testing.T) {
	b, err := hex.DecodeString(hostosNodeHex)
	if err != nil {
		t.Fatal(err)
	}
	var rec NodeRecordPB
	if err := rec.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if rec.HostosVersionID == nil || *rec.HostosVersionID != "68e6e2b4e4a1fb7c0c0e8f3b0a4c2d6e1f9a8b7c" || string(rec.NodeOperatorID) != "\x01\x02\x03" {
		t.Fatalf("decoded %+v", rec)
	}
	if got := hex.EncodeToString(rec.Marshal()); got != hostosNodeHex {
		t.Fatalf("re-encoded\n got  %s\n want %s", got, hostosNodeHex)
	}
	rec.HostosVersionID = nil
	if got := hex.EncodeToString(rec.Marshal()); got != "7a03010203" {
		t.Fatalf("with no HostOS version the record encodes as %s", got)
	}
}
