package nns

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// certifiedDelta is shared/conformance/registry_certified_delta.json: a real
// mainnet get_certified_changes_since reply.
type certifiedDelta struct {
	RegistryCanisterID     string `json:"registry_canister_id"`
	RequestedVersion       uint64 `json:"requested_version"`
	CertifiedLatestVersion uint64 `json:"certified_latest_version"`
	CertificateTimeNanos   int64  `json:"certificate_time_nanos"`
	CertificateHex         string `json:"certificate_hex"`
	HashTreeHex            string `json:"hash_tree_hex"`
	Versions               []struct {
		Version   uint64 `json:"version"`
		Mutations []struct {
			Key          string `json:"key"`
			MutationType int32  `json:"mutation_type"`
			ValueHex     string `json:"value_hex"`
		} `json:"mutations"`
	} `json:"versions"`
	Expect map[string]any `json:"expect"`
}

func loadCertifiedDelta(t *testing.T) (f certifiedDelta, cert []byte, tree []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/registry_certified_delta.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	cert, err1 := hex.DecodeString(f.CertificateHex)
	tree, err2 := hex.DecodeString(f.HashTreeHex)
	if err1 != nil || err2 != nil || f.RegistryCanisterID != RegistryCanisterID {
		t.Fatalf("fixture: %v %v %s", err1, err2, f.RegistryCanisterID)
	}
	return f, cert, tree
}

// mainnetAt verifies under the mainnet root key with the clock at the
// certificate's time.
func mainnetAt(t *testing.T, nanos int64) *certificate.Verifier {
	t.Helper()
	v, err := certificate.NewVerifier(certificate.MainnetRootKeyDER(), certificate.Options{Now: func() time.Time { return time.Unix(0, nanos) }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func verifyFixture(cert, tree []byte, since uint64, v *certificate.Verifier) (*CertifiedChanges, error) {
	var m registrypb.MixedHashTree
	if err := proto.Unmarshal(tree, &m); err != nil {
		return nil, err
	}
	return VerifyCertifiedTree(cert, &m, since, v)
}

func TestTheMainnetCertifiedDeltaVerifiesAndCarriesItsSubnetRecord(t *testing.T) {
	f, cert, tree := loadCertifiedDelta(t)
	got, err := verifyFixture(cert, tree, f.RequestedVersion, mainnetAt(t, f.CertificateTimeNanos))
	if err != nil {
		t.Fatal(err)
	}
	if got.LatestVersion != f.CertifiedLatestVersion || len(got.Deltas) != len(f.Versions) {
		t.Fatalf("latest %d with %d deltas, want %d with %d", got.LatestVersion, len(got.Deltas), f.CertifiedLatestVersion, len(f.Versions))
	}
	for i, want := range f.Versions {
		d := got.Deltas[i]
		if d.Version != want.Version || len(d.Mutations) != len(want.Mutations) {
			t.Fatalf("delta %d: version %d with %d mutations, want %d with %d", i, d.Version, len(d.Mutations), want.Version, len(want.Mutations))
		}
		for j, wm := range want.Mutations {
			m := d.Mutations[j]
			value, _ := hex.DecodeString(wm.ValueHex)
			if string(m.Key) != wm.Key || int32(m.MutationType) != wm.MutationType || !bytes.Equal(m.GetValue(), value) {
				t.Fatalf("mutation %d.%d: %s type %d, value equal %t", i, j, m.Key, m.MutationType, bytes.Equal(m.GetValue(), value))
			}
		}
	}

	// The record it carries, through the view alp reads.
	var rec SubnetRecordPB
	if err := rec.Unmarshal(got.Deltas[0].Mutations[0].GetValue()); err != nil {
		t.Fatal(err)
	}
	var first3 []any
	for _, m := range rec.Membership[:3] {
		p, err := principal.FromBytes(m)
		if err != nil {
			t.Fatal(err)
		}
		first3 = append(first3, p.String())
	}
	readonly := []any{}
	for _, k := range rec.SSHReadonlyAccess {
		readonly = append(readonly, k)
	}
	var sev any
	if rec.Features != nil && rec.Features.SevEnabled != nil {
		sev = *rec.Features.SevEnabled
	}
	decoded := map[string]any{
		"message":                        "registry.subnet.v1.SubnetRecord",
		"membership_count":               float64(len(rec.Membership)),
		"membership_text_first3":         first3,
		"max_ingress_bytes_per_message":  float64(rec.MaxIngressBytesPerMessage),
		"unit_delay_millis":              float64(rec.UnitDelayMillis),
		"initial_notary_delay_millis":    float64(rec.InitialNotaryDelayMillis),
		"replica_version_id":             rec.ReplicaVersionID,
		"dkg_interval_length":            float64(rec.DkgIntervalLength),
		"subnet_type":                    float64(rec.SubnetType),
		"dkg_dealings_per_block":         float64(rec.DkgDealingsPerBlock),
		"max_ingress_messages_per_block": float64(rec.MaxIngressMessagesPerBlock),
		"max_block_payload_size":         float64(rec.MaxBlockPayloadSize),
		"features.present":               rec.Features != nil,
		"features.sev_enabled":           sev,
		"max_number_of_canisters":        float64(rec.MaxNumberOfCanisters),
		"ssh_readonly_access":            readonly,
		"ssh_backup_access_count":        float64(len(rec.SSHBackupAccess)),
		"is_halted":                      rec.IsHalted,
		"canister_cycles_cost_schedule":  float64(rec.CanisterCyclesCostSchedule),
	}
	for k, want := range f.Expect {
		got, ok := decoded[k]
		if !ok {
			t.Errorf("expect key %q is not checked here", k)
			continue
		}
		if p := compare(k, got, want); p != "" {
			t.Error(p)
		}
	}
	// What the view does not name of the mainnet record (decoded by
	// google.golang.org/protobuf from bytes protoc's peers wrote): the
	// record: nothing, so an update_subnet on this subnet resets nothing.
	if um := rec.Unmodelled(); len(um.Record)+len(um.Features)+len(um.ResourceLimits) != 0 {
		t.Errorf("the mainnet record carries fields the view does not name: %+v", um)
	}
	// And nothing of it is lost when it is written again.
	var again, orig registrypb.SubnetRecord
	if proto.Unmarshal(rec.Marshal(), &again) != nil || proto.Unmarshal(got.Deltas[0].Mutations[0].GetValue(), &orig) != nil || !proto.Equal(&again, &orig) {
		t.Error("the mainnet subnet record re-encodes to a different record")
	}
}

func TestAnyFlippedByteInTheCertifiedDeltaFailsIt(t *testing.T) {
	f, cert, tree := loadCertifiedDelta(t)
	v := mainnetAt(t, f.CertificateTimeNanos)
	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 0x01; return c }
	value, _ := hex.DecodeString(f.Versions[0].Mutations[0].ValueHex)
	inTree := bytes.Index(tree, value)
	if inTree < 0 {
		t.Fatal("the mutation's value is not in the tree bytes")
	}
	for name, c := range map[string]struct{ cert, tree []byte }{
		"a byte of the record's value":      {cert, flip(tree, inTree+len(value)/2)},
		"the certified current_version":     {cert, flip(tree, bytes.Index(tree, []byte("current_version"))+len("current_version")+4)},
		"the certificate's signature (end)": {flip(cert, len(cert)-1), tree},
		"the certificate's tree":            {flip(cert, len(cert)/3), tree},
	} {
		if _, err := verifyFixture(c.cert, c.tree, f.RequestedVersion, v); !errors.Is(err, ErrNotCertified) {
			t.Errorf("%s flipped: err = %v, want ErrNotCertified", name, err)
		}
	}
	other, err := certificate.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	wrongRoot, err := certificate.NewVerifier(other.PublicKey().DER(), certificate.Options{Now: func() time.Time { return time.Unix(0, f.CertificateTimeNanos) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyFixture(cert, tree, f.RequestedVersion, wrongRoot); !errors.Is(err, ErrNotCertified) {
		t.Errorf("under another root key: %v", err)
	}
	late, err := certificate.NewVerifier(certificate.MainnetRootKeyDER(), certificate.Options{Now: func() time.Time { return time.Unix(0, f.CertificateTimeNanos).Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyFixture(cert, tree, f.RequestedVersion, late); !errors.Is(err, ErrNotCertified) {
		t.Errorf("an hour-old certificate: %v", err)
	}
}

func TestAMainnetReplyThatDropsItsDeltaStillVerifiesButIsNotTheRangeAskedFor(t *testing.T) {
	f, cert, raw := loadCertifiedDelta(t)
	v := mainnetAt(t, f.CertificateTimeNanos)
	var tree registrypb.MixedHashTree
	if err := proto.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	full, err := treeOf(&tree, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Keep only current_version: the delta is pruned to its digest, and the
	// tree still hashes to the certified root.
	tree = *MixedHashTreeOf(certificate.Prune(full, certificate.Path("current_version")))
	pruned, err := proto.Marshal(&tree)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := verifyCertifiedTree(cert, &tree, v); err != nil || len(got.Deltas) != 0 {
		t.Fatalf("the pruned tree: %v, %+v; want it to verify with no delta", err, got)
	}
	_, err = verifyFixture(cert, pruned, f.RequestedVersion, v)
	if !errors.Is(err, ErrInvalidDeltas) || !errors.Is(err, ErrNotCertified) || !strings.Contains(err.Error(), "newer than the 62953 asked for, but the reply has no delta") {
		t.Fatalf("err = %v, want ErrInvalidDeltas for a reply with no delta", err)
	}

	// The whole reply, read as the answer to an older request, has a gap.
	_, err = verifyFixture(cert, raw, f.RequestedVersion-1, v)
	if !errors.Is(err, ErrInvalidDeltas) || !strings.Contains(err.Error(), "version 62954 follows 62952") {
		t.Fatalf("err = %v, want a gap after 62952", err)
	}
}
