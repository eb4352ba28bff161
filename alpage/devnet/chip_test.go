package devnet

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// TestASevNodesChipIsReadBackThroughTheRegistry reads a SEV subnet member's
// node record from the devnet exactly as alp reads mainnet (agent with
// certified, signature-checked queries, get_value, the NodeRecord view) and
// finds its chip; the bytes carry it as field 16.
func TestASevNodesChipIsReadBackThroughTheRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	on := true
	f.Subnets[0].SevEnabled = &on
	member := f.Subnets[0].Members[0]
	var chip string
	for _, n := range f.Nodes {
		if n.ID == member {
			chip = n.ChipID
		}
	}
	if chip == "" {
		t.Fatalf("the fleet's first subnet member %s has no chip", member)
	}
	_, a := startWithAgent(ctx, t, f)
	r := nns.RegistryClient{Caller: a}
	sub, ok, err := r.SubnetRecord(ctx, principal.MustDecode(f.Subnets[0].ID))
	if err != nil || !ok || sub.Features == nil || sub.Features.SevEnabled == nil || !*sub.Features.SevEnabled {
		t.Fatalf("the subnet is not a SEV subnet: %v %t %+v", err, ok, sub.Features)
	}
	id := principal.MustDecode(member)
	rec, ok, err := r.NodeRecord(ctx, id)
	if err != nil || !ok {
		t.Fatalf("node record: %v %t", err, ok)
	}
	if got := hex.EncodeToString(rec.ChipID); got != chip {
		t.Fatalf("chip_id read back as %q, want %q", got, chip)
	}
	raw, _, _, err := r.GetValue(ctx, nns.NodeRecordKey(member), 0)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hex.DecodeString(chip)
	if field16 := fieldBytes(raw, 16); !bytes.Equal(field16, want) {
		t.Fatalf("field 16 of the record holds %x, want the chip", field16)
	}
}

// startWithAgent starts a devnet of f for the test and returns it with an
// anonymous agent that trusts its root key.
func startWithAgent(ctx context.Context, t *testing.T, f *Fleet) (*Devnet, *agent.Agent) {
	t.Helper()
	d, err := Start(ctx, Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	return d, a
}

// fieldBytes returns the last length-delimited value of field num in a
// protobuf message, by the wire format alone.
func fieldBytes(b []byte, num protowire.Number) []byte {
	var out []byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return nil
			}
			out = v
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil
		}
		b = b[l:]
	}
	return out
}
