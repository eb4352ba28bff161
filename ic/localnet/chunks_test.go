package localnet_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"alpnib.dev/ic/localnet/localnettest"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
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

	_, a := localnettest.Serve(t, reg)
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

func TestAPinnedClientReadsTheSubnetAsItWasAtItsVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := registry.New()
	subnet := pid("pinned subnet")
	key := nns.SubnetRecordKey(subnet.String())
	rec := nns.SubnetRecordPB{ReplicaVersionID: "v1", SubnetType: nns.SubnetTypeApplication, HaltAtCupHeight: true}
	v1 := reg.Apply([]registry.Mutation{{Key: key, Value: rec.Marshal()}})
	rec.ReplicaVersionID = "v2"
	reg.Apply([]registry.Mutation{{Key: key, Value: rec.Marshal()}})
	_, a := localnettest.Serve(t, reg)
	r := nns.RegistryClient{Caller: a}

	latest, err := r.GetSubnet(ctx, subnet)
	if err != nil || latest.ReplicaVersionID != "v2" {
		t.Fatalf("latest: %v %+v", err, latest)
	}
	then, err := r.At(v1).GetSubnet(ctx, subnet)
	if err != nil || then.ReplicaVersionID != "v1" {
		t.Fatalf("at version %d: %v %+v", v1, err, then)
	}
	// The pinned rendering is get_subnet's: the same record but the version.
	then.ReplicaVersionID = "v2"
	if !reflect.DeepEqual(then, latest) {
		t.Fatalf("the pinned read renders differently:\n%+v\n%+v", *then, *latest)
	}
	if _, err := r.At(v1).GetSubnet(ctx, pid("nope")); err == nil {
		t.Fatal("a missing subnet read at a version gave no error")
	}
}

func TestTheElectedSetIsTheReplicaVersionRecordsForTheRegistryAndTheClientAlike(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := registry.New()
	reg.ElectVersion("a", nns.ReplicaVersionRecordPB{})
	reg.ElectVersion("b", nns.ReplicaVersionRecordPB{})
	// A blessed list that disagrees: it names c (no record) and not b.
	stale := nns.BlessedReplicaVersionsPB{BlessedVersionIDs: []string{"a", "c"}}
	reg.Apply([]registry.Mutation{{Key: nns.BlessedReplicaVersionsKey, Value: stale.Marshal()}})
	_, a := localnettest.Serve(t, reg)

	got, err := nns.RegistryClient{Caller: a}.ElectedVersions(ctx)
	if err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("client: %v %v", got, err)
	}
	if local := reg.ElectedVersions(); !reflect.DeepEqual(local, got) || !reg.Elected("b") || reg.Elected("c") {
		t.Fatalf("local registry: %v, b %t, c %t", local, reg.Elected("b"), reg.Elected("c"))
	}
}

// countingCaller counts the queries of one method.
type countingCaller struct {
	nns.Caller
	method string
	n      *int
}

func (c countingCaller) Query(ctx context.Context, canister principal.Principal, method string, arg []byte) ([]byte, error) {
	if method == c.method {
		*c.n++
	}
	return c.Caller.Query(ctx, canister, method, arg)
}

func TestALongChangeLogIsReadPageByPageToTheEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := registry.New()
	reg.MaxChangesBytes = 200
	for i := range 20 {
		reg.Apply([]registry.Mutation{{Key: fmt.Sprintf("key_%02d", i), Value: bytes.Repeat([]byte{byte(i)}, 50)}})
	}
	_, a := localnettest.Serve(t, reg)
	pages := 0
	r := nns.RegistryClient{Caller: countingCaller{Caller: a, method: "get_changes_since", n: &pages}}
	changes, latest, err := r.GetChangesSince(ctx, 0)
	if err != nil || latest != 20 || len(changes) != 20 {
		t.Fatalf("%d changes up to %d: %v", len(changes), latest, err)
	}
	if pages < 5 {
		t.Fatalf("read in %d pages; with 200-byte pages of 56-byte versions it takes at least 5", pages)
	}
}
