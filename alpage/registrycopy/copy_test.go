package registrycopy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/alpage/registrycopy"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/localnettest"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// network is a local registry behind the IC HTTP interface.
type network struct {
	reg      *registry.Registry
	srv      *localnet.Server
	client   nns.RegistryClient
	verifier *certificate.Verifier
}

func serve(t testing.TB, reg *registry.Registry) *network {
	t.Helper()
	srv, a := localnettest.Serve(t, reg)
	v, err := certificate.NewVerifier(srv.RootKeyDER(), certificate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &network{reg: reg, srv: srv, client: nns.RegistryClient{Caller: a}, verifier: v}
}

func seeded(n int) *registry.Registry {
	reg := registry.New()
	for i := range n {
		reg.Apply([]registry.Mutation{{Key: fmt.Sprintf("key_%03d", i), Value: []byte(fmt.Sprintf("value %d", i))}})
	}
	return reg
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func sync1(t *testing.T, dir string, src registrycopy.Source, v *certificate.Verifier, log io.Writer) (*registrycopy.Copy, registrycopy.Result) {
	t.Helper()
	c, res, err := registrycopy.Sync(ctx(t), dir, src, v, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, res
}

func mustGet(t *testing.T, c *registrycopy.Copy, key string, version uint64) ([]byte, bool) {
	t.Helper()
	v, _, found, err := c.Get(ctx(t), key, version)
	if err != nil {
		t.Fatal(err)
	}
	return v, found
}

func TestALaterSyncFetchesOnlyWhatChangedSinceTheCopysVersion(t *testing.T) {
	n := serve(t, seeded(5))
	dir := t.TempDir()
	c, res := sync1(t, dir, n.client, n.verifier, io.Discard)
	if res.From != 0 || res.To != 5 || res.Deltas != 5 || res.Requests != 1 {
		t.Fatalf("first sync %+v, want 0→5 with 5 deltas in 1 request", res)
	}
	c.Close()

	n.reg.Apply([]registry.Mutation{{Key: "key_001", Value: []byte("changed")}, {Key: "key_002", Delete: true}})
	c, res = sync1(t, dir, n.client, n.verifier, io.Discard)
	if res.From != 5 || res.To != 6 || res.Deltas != 1 || res.Requests != 1 {
		t.Fatalf("second sync %+v, want 5→6 with 1 delta in 1 request", res)
	}
	if v, _ := mustGet(t, c, "key_001", 0); string(v) != "changed" {
		t.Errorf("key_001 = %q, want the change", v)
	}
	if v, _ := mustGet(t, c, "key_001", 5); string(v) != "value 1" {
		t.Errorf("key_001 at 5 = %q, want the old value", v)
	}
	if _, found := mustGet(t, c, "key_002", 0); found {
		t.Error("key_002 is still there after its deletion")
	}
	if _, found := mustGet(t, c, "key_002", 5); !found {
		t.Error("key_002 is gone at version 5, before its deletion")
	}
	_, res = sync1(t, dir, n.client, n.verifier, io.Discard)
	if res.Deltas != 0 || res.Requests != 1 {
		t.Errorf("a sync with nothing new %+v, want 0 deltas in 1 request", res)
	}
}

func TestAChunkedRecordRoundTrips(t *testing.T) {
	reg := registry.New()
	reg.ChunkSize = 4096
	big := make([]byte, 3*registry.MinChunkableValueLen+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	reg.Apply([]registry.Mutation{{Key: "big", Value: big}, {Key: "small", Value: []byte("s")}})
	n := serve(t, reg)
	c, _ := sync1(t, t.TempDir(), n.client, n.verifier, io.Discard)
	got, found := mustGet(t, c, "big", 0)
	if !found || !bytes.Equal(got, big) {
		t.Fatalf("the chunked value read back as %d bytes (found %v), want the %d written", len(got), found, len(big))
	}
}

// tamperer rewrites the nth get_certified_changes_since reply (1-based).
type tamperer struct {
	nns.Caller
	nth   int32
	calls atomic.Int32
	edit  func(t *registrypb.CertifiedResponse)
}

func (f *tamperer) Query(ctx context.Context, c principal.Principal, method string, arg []byte) ([]byte, error) {
	raw, err := f.Caller.Query(ctx, c, method, arg)
	if err != nil || method != "get_certified_changes_since" || f.calls.Add(1) != f.nth {
		return raw, err
	}
	var resp registrypb.CertifiedResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return nil, err
	}
	f.edit(&resp)
	return proto.Marshal(&resp)
}

// deltaLeaves returns the labeled delta nodes of a reply's tree, in order.
func deltaLeaves(m *registrypb.MixedHashTree) []*registrypb.MixedHashTree_Labeled {
	var out []*registrypb.MixedHashTree_Labeled
	var walk func(m *registrypb.MixedHashTree, inDelta bool)
	walk = func(m *registrypb.MixedHashTree, inDelta bool) {
		switch t := m.GetTreeEnum().(type) {
		case *registrypb.MixedHashTree_Fork_:
			walk(t.Fork.LeftTree, inDelta)
			walk(t.Fork.RightTree, inDelta)
		case *registrypb.MixedHashTree_Labeled_:
			if inDelta {
				out = append(out, t.Labeled)
				return
			}
			walk(t.Labeled.Subtree, string(t.Labeled.Label) == "delta")
		}
	}
	walk(m, false)
	return out
}

// rejectedThenRebuilt syncs once honestly, changes the registry, then has
// the next reply edited: the sync must say the copy was discarded, and
// rebuild it to the registry's version from an honest reply.
func rejectedThenRebuilt(t *testing.T, want string, edit func(n *network, resp *registrypb.CertifiedResponse)) {
	t.Helper()
	n := serve(t, seeded(4))
	dir := t.TempDir()
	c, _ := sync1(t, dir, n.client, n.verifier, io.Discard)
	c.Close()
	n.reg.Apply([]registry.Mutation{{Key: "key_000", Value: []byte("new")}})
	n.reg.Apply([]registry.Mutation{{Key: "key_001", Value: []byte("newer")}})

	bad := &tamperer{Caller: n.client.Caller, nth: 1, edit: func(r *registrypb.CertifiedResponse) { edit(n, r) }}
	var log strings.Builder
	c, res := sync1(t, dir, nns.RegistryClient{Caller: bad}, n.verifier, &log)
	if !res.Rebuilt || !strings.Contains(res.Reason, want) {
		t.Fatalf("sync %+v, want it rebuilt because %q", res, want)
	}
	if !strings.Contains(log.String(), "discarding the copy at version 4 and rebuilding it from version 0") {
		t.Errorf("the sync did not say it discarded the copy: %q", log.String())
	}
	if res.To != 6 || res.Deltas != 6 {
		t.Errorf("rebuilt to %d with %d deltas, want 6 and 6", res.To, res.Deltas)
	}
	if v, _ := mustGet(t, c, "key_001", 0); string(v) != "newer" {
		t.Errorf("key_001 = %q after the rebuild, want newer", v)
	}
}

func TestATamperedDeltaIsRejectedAndTheCopyRebuilt(t *testing.T) {
	rejectedThenRebuilt(t, "registry reply is not certified", func(_ *network, r *registrypb.CertifiedResponse) {
		l := deltaLeaves(r.HashTree)[0]
		leaf := l.Subtree.TreeEnum.(*registrypb.MixedHashTree_LeafData)
		leaf.LeafData = bytes.Replace(leaf.LeafData, []byte("new"), []byte("bad"), 1)
	})
}

func TestACertificateUnderAnotherRootKeyIsRejectedAndTheCopyRebuilt(t *testing.T) {
	rejectedThenRebuilt(t, "registry reply is not certified", func(n *network, r *registrypb.CertifiedResponse) {
		// The same registry served by a network with its own key.
		other := serve(t, n.reg)
		raw, err := other.client.Caller.Query(context.Background(), localnet.RegistryID, "get_certified_changes_since", mustMarshal(t, &registrypb.RegistryGetChangesSinceRequest{Version: 4}))
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(raw, r); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAHashTreeMissingAVersionIsRejectedAndTheCopyRebuilt(t *testing.T) {
	rejectedThenRebuilt(t, "version 6 follows 4", func(_ *network, r *registrypb.CertifiedResponse) {
		// Prune version 5 away: the root hash, and so the certificate,
		// still verify; only the range check sees the gap.
		l := deltaLeaves(r.HashTree)[0]
		d := certificate.Leaf(l.Subtree.GetLeafData()).Digest()
		l.Subtree = &registrypb.MixedHashTree{TreeEnum: &registrypb.MixedHashTree_PrunedDigest{PrunedDigest: d[:]}}
	})
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAFileThatIsNotACopyIsDiscardedAndRebuilt(t *testing.T) {
	n := serve(t, seeded(3))
	dir := t.TempDir()
	c, _ := sync1(t, dir, n.client, n.verifier, io.Discard)
	c.Close()
	if err := writeGarbage(c.Path()); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	_, res := sync1(t, dir, n.client, n.verifier, &log)
	if !res.Rebuilt || res.To != 3 || !strings.Contains(log.String(), "rebuilding it from version 0") {
		t.Fatalf("sync %+v (%q), want the damaged file rebuilt to version 3", res, log.String())
	}
}

func TestTwoRunsInParallelShareTheCopySafely(t *testing.T) {
	n := serve(t, seeded(50))
	dir := t.TempDir()
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		versions := make([]uint64, 4)
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, res, err := registrycopy.Sync(ctx(t), dir, n.client, n.verifier, io.Discard)
				if err != nil {
					errs[i] = err
					return
				}
				defer c.Close()
				if res.Rebuilt {
					errs[i] = errors.New("rebuilt: " + res.Reason)
				}
				versions[i] = res.To
			}()
		}
		wg.Wait()
		for i := range 4 {
			if errs[i] != nil || versions[i] != n.reg.Version() {
				t.Fatalf("round %d run %d: version %d, err %v; want %d", round, i, versions[i], errs[i], n.reg.Version())
			}
		}
		for i := range 10 {
			n.reg.Apply([]registry.Mutation{{Key: fmt.Sprintf("round_%d_%d", round, i), Value: []byte("x")}})
		}
	}
	c, _ := sync1(t, dir, n.client, n.verifier, io.Discard)
	recs, err := c.Scan(ctx(t), "", n.reg.Version())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 50+3*10 {
		t.Errorf("the copy holds %d keys, want 80", len(recs))
	}
}

func TestRunsThatCreateTheCopyAtOnceAllOpenIt(t *testing.T) {
	// Without the lock on the dir, about one round in forty saw "database
	// is locked" from the switch to WAL, and Sync then discarded the file
	// the other runs were using.
	for round := range 60 {
		dir := t.TempDir()
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range 4 {
			wg.Go(func() {
				c, err := registrycopy.Open(ctx(t), dir)
				if err == nil {
					_, err = c.Version(ctx(t))
					c.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d run %d: %v", round, i, err)
			}
		}
	}
}

// Several runs that find the same damaged file each discard "it" — the
// second discard removes the fresh copy the first run is already using.
func TestOfRunsThatFindTheSameDamagedFileOnlyOneRebuildsIt(t *testing.T) {
	n := serve(t, seeded(50))
	for round := range 5 {
		dir := t.TempDir()
		c, _ := sync1(t, dir, n.client, n.verifier, io.Discard)
		c.Close()
		if err := writeGarbage(c.Path()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		rebuilt := 0
		for range 4 {
			wg.Go(func() {
				c, res, err := registrycopy.Sync(ctx(t), dir, n.client, n.verifier, io.Discard)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				if res.Rebuilt {
					mu.Lock()
					rebuilt++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if rebuilt > 1 {
			t.Fatalf("round %d: %d runs discarded the copy; every discard after the first deleted a file another run had open", round, rebuilt)
		}
	}
}

func writeGarbage(path string) error {
	return os.WriteFile(path, []byte("this is not a SQLite database, not even close to one......................................................"), 0o600)
}

func TestTheViewListsTheElectedVersionsAtItsVersion(t *testing.T) {
	reg := registry.New()
	reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	reg.ElectVersion("v2", nns.ReplicaVersionRecordPB{})
	n := serve(t, reg)
	before := reg.Version()
	if err := reg.UnelectVersion("v1"); err != nil {
		t.Fatal(err)
	}
	c, res := sync1(t, t.TempDir(), n.client, n.verifier, io.Discard)
	for _, tc := range []struct {
		at   uint64
		want []string
	}{{before, []string{"v1", "v2"}}, {res.To, []string{"v2"}}} {
		got, err := c.At(tc.at).ElectedVersions(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("elected at %d: %v, want %v", tc.at, got, tc.want)
		}
	}
}
