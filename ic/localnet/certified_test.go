package localnet_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/localnet/localnettest"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// flippingCaller flips one byte in the middle of every reply to method.
type flippingCaller struct {
	nns.Caller
	method string
}

func (f flippingCaller) Query(ctx context.Context, c principal.Principal, method string, arg []byte) ([]byte, error) {
	raw, err := f.Caller.Query(ctx, c, method, arg)
	if err == nil && method == f.method && len(raw) > 0 {
		raw = bytes.Clone(raw)
		raw[len(raw)/2] ^= 0x01
	}
	return raw, err
}

// skippingCaller answers get_certified_changes_since for version v with the
// registry's reply for v+1: a certified reply whose first delta is missing.
type skippingCaller struct{ nns.Caller }

func (s skippingCaller) Query(ctx context.Context, c principal.Principal, method string, arg []byte) ([]byte, error) {
	if method == "get_certified_changes_since" {
		var req registrypb.RegistryGetChangesSinceRequest
		if err := proto.Unmarshal(arg, &req); err != nil {
			return nil, err
		}
		req.Version++
		next, err := proto.Marshal(&req)
		if err != nil {
			return nil, err
		}
		arg = next
	}
	return s.Caller.Query(ctx, c, method, arg)
}

func TestACertifiedReplyThatDropsAVersionIsRefusedThoughItVerifies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := registry.New()
	for _, k := range []string{"a", "b", "c"} {
		reg.Apply([]registry.Mutation{{Key: k, Value: []byte(k)}})
	}
	srv, a := localnettest.Serve(t, reg)
	v, err := certificate.NewVerifier(srv.RootKeyDER(), certificate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The reply for version 1 verifies: versions 2 and 3, version 1 pruned.
	if got, err := (nns.RegistryClient{Caller: a}).GetCertifiedChangesSince(ctx, 1, v); err != nil || len(got.Deltas) != 2 {
		t.Fatalf("since 1: %v, %+v", err, got)
	}
	// Handed over as the answer for version 0, it lacks version 1.
	_, err = nns.RegistryClient{Caller: skippingCaller{a}}.GetCertifiedChangesSince(ctx, 0, v)
	if !errors.Is(err, nns.ErrInvalidDeltas) || !strings.Contains(err.Error(), "version 2 follows 0") {
		t.Fatalf("err = %v, want ErrInvalidDeltas: version 2 follows 0", err)
	}
	// A reply with no delta for a reader behind the registry is refused too.
	reg.Apply([]registry.Mutation{{Key: "d", Value: []byte("d")}})
	_, err = nns.RegistryClient{Caller: skippingCaller{a}}.GetCertifiedChangesSince(ctx, 3, v)
	if !errors.Is(err, nns.ErrInvalidDeltas) || !strings.Contains(err.Error(), "version 4 is newer than the 3 asked for, but the reply has no delta") {
		t.Fatalf("err = %v, want ErrInvalidDeltas: no delta", err)
	}
}

func TestTheLocalRegistryCertifiesItsChangeLogAsTheCanisterDoes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := registry.New()
	reg.ChunkSize = 4096
	big := make([]byte, 3*registry.MinChunkableValueLen)
	for i := range big {
		big[i] = byte(i)
	}
	reg.Apply([]registry.Mutation{{Key: "small", Value: []byte("one")}, {Key: "big", Value: big}})
	reg.Apply([]registry.Mutation{{Key: "small", Delete: true}})
	reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})

	srv, a := localnettest.Serve(t, reg)
	v, err := certificate.NewVerifier(srv.RootKeyDER(), certificate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := nns.RegistryClient{Caller: a}

	got, err := r.GetCertifiedChangesSince(ctx, 0, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.LatestVersion != reg.Version() || len(got.Deltas) != int(reg.Version()) {
		t.Fatalf("latest %d with %d deltas, want %d of each", got.LatestVersion, len(got.Deltas), reg.Version())
	}
	describe := func(d nns.CertifiedDelta) string {
		s := fmt.Sprint(d.Version)
		for _, m := range d.Mutations {
			s += fmt.Sprintf(" %s:%s:%d", m.Key, m.MutationType, len(m.GetValue()))
		}
		return s
	}
	want := []string{"1 big:UPSERT:30000 small:UPSERT:3", "2 small:DELETE:0", "3 blessed_replica_versions:UPSERT:4 replica_version_v1:UPSERT:0"}
	for i, d := range got.Deltas {
		if describe(d) != want[i] {
			t.Errorf("delta %d: %s, want %s", i, describe(d), want[i])
		}
	}
	if !bytes.Equal(got.Deltas[0].Mutations[0].GetValue(), big) {
		t.Error("the chunked value does not come back whole")
	}

	after, err := r.GetCertifiedChangesSince(ctx, 2, v)
	if err != nil || len(after.Deltas) != 1 || after.Deltas[0].Version != 3 {
		t.Fatalf("since 2: %v %+v", err, after)
	}

	other, _ := certificate.GenerateKey(rand.Reader)
	wrong, _ := certificate.NewVerifier(other.PublicKey().DER(), certificate.Options{})
	if _, err := r.GetCertifiedChangesSince(ctx, 0, wrong); !errors.Is(err, nns.ErrNotCertified) {
		t.Errorf("under another root key: %v", err)
	}
	tampered := nns.RegistryClient{Caller: flippingCaller{Caller: a, method: "get_certified_changes_since"}}
	if _, err := tampered.GetCertifiedChangesSince(ctx, 0, v); err == nil {
		t.Error("a reply with a flipped byte verifies")
	}
}

// get_certified_changes_since answers a page at a time, as the canister
// does: whole deltas, oldest first, up to the reply bound; the reader asks
// again from the last version it got.
// pagedRegistry serves a registry of n versions whose
// get_certified_changes_since answers pages of at most 300 bytes.
func pagedRegistry(t *testing.T, n int) (*registry.Registry, nns.RegistryClient, *certificate.Verifier) {
	t.Helper()
	reg := registry.New()
	for i := range n {
		reg.Apply([]registry.Mutation{{Key: "k", Value: []byte(fmt.Sprintf("value %02d, padded to be a few dozen bytes long", i))}})
	}
	reg.MaxChangesBytes = 300
	srv, a := localnettest.Serve(t, reg)
	v, err := certificate.NewVerifier(srv.RootKeyDER(), certificate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return reg, nns.RegistryClient{Caller: a}, v
}

func TestCertifiedChangesComeInPages(t *testing.T) {
	ctx := context.Background()
	reg, r, v := pagedRegistry(t, 40)
	var from uint64
	pages := 0
	for from < reg.Version() {
		got, err := r.GetCertifiedChangesSince(ctx, from, v)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Deltas) == 0 || got.Deltas[0].Version != from+1 || got.LatestVersion != reg.Version() {
			t.Fatalf("page from %d: %d deltas, first %+v, latest %d", from, len(got.Deltas), got.Deltas, got.LatestVersion)
		}
		from = got.Deltas[len(got.Deltas)-1].Version
		pages++
	}
	if pages < 5 {
		t.Fatalf("40 versions in %d page(s) of at most 300 bytes", pages)
	}
}

// The registry keeps the certified tree of a version for the pages that
// follow; a change in between is in the next page, certified.
func TestAChangeBetweenPagesIsInTheNextOne(t *testing.T) {
	ctx := context.Background()
	reg, r, v := pagedRegistry(t, 20)
	first, err := r.GetCertifiedChangesSince(ctx, 0, v)
	if err != nil || len(first.Deltas) == 0 || first.LatestVersion != 20 {
		t.Fatalf("first page: %v, %+v", err, first)
	}
	reg.Apply([]registry.Mutation{{Key: "new", Value: []byte("written between two pages")}})
	from, seen := first.Deltas[len(first.Deltas)-1].Version, false
	for from < reg.Version() {
		got, err := r.GetCertifiedChangesSince(ctx, from, v)
		if err != nil {
			t.Fatal(err)
		}
		if got.LatestVersion != 21 {
			t.Fatalf("page from %d says the latest version is %d, want 21", from, got.LatestVersion)
		}
		for _, d := range got.Deltas {
			for _, m := range d.Mutations {
				seen = seen || (d.Version == 21 && string(m.Key) == "new")
			}
		}
		from = got.Deltas[len(got.Deltas)-1].Version
	}
	if !seen {
		t.Fatal("the change made between two pages never came")
	}
}
