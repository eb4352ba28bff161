package localnet_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

func TestALargeRecordTravelsInChunksAndComesBackWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := registry.New()
	reg.ChunkSize = 4096
	subnet := pid("big subnet")
	rec := nns.SubnetRecordPB{ReplicaVersionID: "v1", SubnetType: nns.SubnetTypeApplication}
	for i := range 400 {
		rec.SSHReadonlyAccess = append(rec.SSHReadonlyAccess, fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%040d key-%d", i, i))
	}
	value := rec.Marshal()
	key := nns.SubnetRecordKey(subnet.String())
	reg.Apply([]registry.Mutation{{Key: key, Value: value}})
	if e, _ := reg.EntryAt(key, 0); len(value) < registry.MinChunkableValueLen || len(e.ChunkKeys) < 3 {
		t.Fatalf("a %d-byte value was stored in %d chunks", len(value), len(e.ChunkKeys))
	}

	_, a := serveRegistry(t, reg)
	r := nns.RegistryClient{Caller: a}

	got, _, found, err := r.GetValue(ctx, key, 0)
	if err != nil || !found || !bytes.Equal(got, value) {
		t.Fatalf("get_value gave %d bytes (found %t): %v", len(got), found, err)
	}
	back, ok, err := r.SubnetRecord(ctx, subnet)
	if err != nil || !ok || len(back.SSHReadonlyAccess) != 400 {
		t.Fatalf("subnet record: %v %t", err, ok)
	}
	changes, _, err := r.GetChangesSince(ctx, 0)
	if err != nil || len(changes) != 1 || !bytes.Equal(changes[0].Value, value) {
		t.Fatalf("get_changes_since: %v %d changes", err, len(changes))
	}
}
