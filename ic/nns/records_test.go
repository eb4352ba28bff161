package nns

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/nns/registrypb"
)

func TestASubnetRecordEncodesToTheProtobufBytesByFieldNumber(t *testing.T) {
	r := SubnetRecordPB{Membership: [][]byte{{1}}, ReplicaVersionID: "abc", SubnetType: SubnetTypeApplication}
	// field 3 bytes {01}; field 9 string "abc"; field 15 varint 1
	want, _ := hex.DecodeString("1a0101" + "4a03616263" + "7801")
	if got := r.Marshal(); !bytes.Equal(got, want) {
		t.Fatalf("got %x want %x", got, want)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	yes, size, delta := true, uint64(1<<30), uint64(1<<20)
	ipv6 := "2001:db8::1"
	subnet := SubnetRecordPB{
		Membership: [][]byte{{1, 2}, {3}}, MaxIngressBytesPerMessage: 2 << 20, UnitDelayMillis: 1000,
		InitialNotaryDelayMillis: 600, ReplicaVersionID: "v1", DkgIntervalLength: 499, SubnetType: SubnetTypeSystem,
		DkgDealingsPerBlock: 1, IsHalted: true, MaxIngressMessagesPerBlock: 1000, MaxBlockPayloadSize: 4 << 20,
		Features:             &SubnetFeaturesRecord{HTTPRequests: true, SevEnabled: &yes},
		MaxNumberOfCanisters: 120000, SSHReadonlyAccess: []string{"ssh-ed25519 A"}, SSHBackupAccess: []string{"b"},
		HaltAtCupHeight: true, CanisterCyclesCostSchedule: CostScheduleFree, SubnetAdmins: [][]byte{{9, 9}},
		MaxIngressBytesPerBlock: 8 << 20, RecalledReplicaVersionIDs: []string{"bad"}, ResourceLimits: &ResourceLimitsRecord{MaximumStateSize: &size, MaximumStateDelta: &delta},
	}
	var s2 SubnetRecordPB
	if err := s2.Unmarshal(subnet.Marshal()); err != nil || !reflect.DeepEqual(subnet, s2) {
		t.Fatalf("subnet: %v\n%+v\n%+v", err, subnet, s2)
	}
	node := NodeRecordPB{HTTP: &ConnectionEndpoint{IPAddr: "::1", Port: 8080}, Xnet: &ConnectionEndpoint{IPAddr: "::1", Port: 2497},
		NodeOperatorID: []byte{7}, ChipID: bytes.Repeat([]byte{0xab}, 64)}
	var n2 NodeRecordPB
	if err := n2.Unmarshal(node.Marshal()); err != nil || !reflect.DeepEqual(node, n2) {
		t.Fatalf("node: %v %+v", err, n2)
	}
	op := NodeOperatorRecordPB{NodeOperatorPrincipalID: []byte{1}, NodeAllowance: 3, NodeProviderPrincipalID: []byte{2},
		RewardableNodes: map[string]uint32{"type3.1": 4, "type1": 2}, DcID: "zh1", IPv6: &ipv6}
	var o2 NodeOperatorRecordPB
	if err := o2.Unmarshal(op.Marshal()); err != nil || !reflect.DeepEqual(op, o2) {
		t.Fatalf("operator: %v %+v", err, o2)
	}
	dc := DataCenterRecordPB{ID: "zh1", Region: "Europe,CH,Zurich", Owner: "Green", Gps: &Gps{Latitude: 47.3, Longitude: 8.5}}
	var d2 DataCenterRecordPB
	if err := d2.Unmarshal(dc.Marshal()); err != nil || !reflect.DeepEqual(dc, d2) {
		t.Fatalf("dc: %v %+v", err, d2)
	}
	rv := ReplicaVersionRecordPB{ReleasePackageSha256Hex: "ff", ReleasePackageURLs: []string{"https://x"}}
	var r2 ReplicaVersionRecordPB
	if err := r2.Unmarshal(rv.Marshal()); err != nil || !reflect.DeepEqual(rv, r2) {
		t.Fatalf("replica version: %v %+v", err, r2)
	}
	bl := BlessedReplicaVersionsPB{BlessedVersionIDs: []string{"a", "b"}}
	var b2 BlessedReplicaVersionsPB
	if err := b2.Unmarshal(bl.Marshal()); err != nil || !reflect.DeepEqual(bl, b2) {
		t.Fatalf("blessed: %v %+v", err, b2)
	}
}

func TestUnknownFieldsAreSkippedAndTruncationIsAnError(t *testing.T) {
	// field 99 varint 5, then field 9 "x"
	b, _ := hex.DecodeString("980605" + "4a0178")
	var r SubnetRecordPB
	if err := r.Unmarshal(b); err != nil || r.ReplicaVersionID != "x" {
		t.Fatalf("got %v %q", err, r.ReplicaVersionID)
	}
	if err := r.Unmarshal([]byte{0x4a, 0x05, 'x'}); err == nil {
		t.Fatal("truncated record decoded")
	}
}

func TestFieldsTheViewDoesNotNameSurviveReEncoding(t *testing.T) {
	// chain_key_config (29) and an unknown field 99 ride along in rest.
	in := &registrypb.SubnetRecord{ReplicaVersionId: "old", ChainKeyConfig: []byte{0x0a, 0x00}}
	in.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5))
	raw, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var rec SubnetRecordPB
	if err := rec.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	rec.ReplicaVersionID = "new"
	var out registrypb.SubnetRecord
	if err := proto.Unmarshal(rec.Marshal(), &out); err != nil {
		t.Fatal(err)
	}
	if out.ReplicaVersionId != "new" || !bytes.Equal(out.ChainKeyConfig, []byte{0x0a, 0x00}) || len(out.ProtoReflect().GetUnknown()) == 0 {
		t.Fatalf("re-encoded record lost fields: %v", &out)
	}
}

func TestUnknownFieldsOfNestedMessagesSurviveReEncoding(t *testing.T) {
	unknown := func(m proto.Message, num protowire.Number) {
		m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), 7))
	}
	size := uint64(1 << 30)
	subnet := &registrypb.SubnetRecord{ReplicaVersionId: "v", Features: &registrypb.SubnetFeatures{HttpRequests: true}, ResourceLimits: &registrypb.ResourceLimits{MaximumStateSize: &size}}
	unknown(subnet.Features, 10)
	unknown(subnet.ResourceLimits, 5) // a ResourceLimits field newer than ours
	node := &registrypb.NodeRecord{Http: &registrypb.ConnectionEndpoint{IpAddr: "::1", Port: 8080}}
	unknown(node.Http, 4) // ConnectionEndpoint.protocol of older records
	dc := &registrypb.DataCenterRecord{Id: "zh1", Gps: &registrypb.Gps{Latitude: 47}}
	unknown(dc.Gps, 3)
	for _, c := range []struct {
		in   proto.Message
		view record
	}{{subnet, &SubnetRecordPB{}}, {node, &NodeRecordPB{}}, {dc, &DataCenterRecordPB{}}} {
		raw, err := proto.Marshal(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.view.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		out := c.in.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(c.view.Marshal(), out); err != nil || !proto.Equal(c.in, out) {
			t.Errorf("%T re-encodes to %v, want %v", c.in, out, c.in)
		}
	}
}
