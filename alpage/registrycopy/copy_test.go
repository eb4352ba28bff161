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

// rejectedAndKept syncs once honestly, changes the registry, then has the
// next reply edited: the sync must fail naming the reply, leave the copy
// at its version with its values, and an honest sync after it must bring
// the copy forward.
func rejectedAndKept(t *testing.T, want string, edit func(n *network, resp *registrypb.CertifiedResponse)) {
	t.Helper()
	n := serve(t, seeded(4))
	dir := t.TempDir()
	c, _ := sync1(t, dir, n.client, n.verifier, io.Discard)
	c.Close()
	n.reg.Apply([]registry.Mutation{{Key: "key_000", Value: []byte("new")}})
	n.reg.Apply([]registry.Mutation{{Key: "key_001", Value: []byte("newer")}})

	bad := &tamperer{Caller: n.client.Caller, nth: 1, edit: func(r *registrypb.CertifiedResponse) { edit(n, r) }}
	refusedAndKept(t, dir, nns.RegistryClient{Caller: bad}, n.verifier, 4, want)

	c, res := sync1(t, dir, n.client, n.verifier, io.Discard)
	if res.From != 4 || res.To != 6 || res.Deltas != 2 || res.Rebuilt {
		t.Errorf("the honest sync after the refusal: %+v, want 4 → 6 in 2 deltas, not rebuilt", res)
	}
	if v, _ := mustGet(t, c, "key_001", 0); string(v) != "newer" {
		t.Errorf("key_001 = %q after the honest sync, want newer", v)
	}
}

// refusedAndKept syncs the copy in dir through src, which must be refused
// naming the reply, and checks the copy is still at version with every
// value it had.
func refusedAndKept(t *testing.T, dir string, src registrycopy.Source, v *certificate.Verifier, version uint64, want string) {
	t.Helper()
	before := snapshot(t, dir, version)
	var log strings.Builder
	c, res, err := registrycopy.Sync(ctx(t), dir, src, v, &log)
	if err == nil {
		c.Close()
		t.Fatalf("sync %+v took a reply it should refuse (%q)", res, want)
	}
	var refused *registrycopy.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), fmt.Sprintf("the reply to get_certified_changes_since %d is refused, so the copy stays at version %d", version, version)) {
		t.Fatalf("sync: %v, want a refusal naming the reply because %q", err, want)
	}
	if res.Rebuilt || strings.Contains(log.String(), "discard") {
		t.Fatalf("the copy was discarded for a reply: %+v %q", res, log.String())
	}
	if after := snapshot(t, dir, version); after != before {
		t.Fatalf("the refused reply changed the copy:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot opens the copy in dir (which must be at version) and renders
// every key's value at that version.
func snapshot(t *testing.T, dir string, version uint64) string {
	t.Helper()
	c, err := registrycopy.Open(ctx(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	at, err := c.Version(ctx(t))
	if err != nil || at != version {
		t.Fatalf("the copy is at version %d (%v), want %d", at, err, version)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "v%d", at)
	for i := range 4 {
		key := fmt.Sprintf("key_%03d", i)
		val, _, found, err := c.Get(ctx(t), key, version)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, " %s=%q/%v", key, val, found)
	}
	return out.String()
}

func TestATamperedDeltaIsRefusedAndTheCopyKept(t *testing.T) {
	rejectedAndKept(t, "registry reply is not certified", func(_ *network, r *registrypb.CertifiedResponse) {
		l := deltaLeaves(r.HashTree)[0]
		leaf := l.Subtree.TreeEnum.(*registrypb.MixedHashTree_LeafData)
		leaf.LeafData = bytes.Replace(leaf.LeafData, []byte("new"), []byte("bad"), 1)
	})
}

func TestACertificateUnderAnotherRootKeyIsRefusedAndTheCopyKept(t *testing.T) {
	rejectedAndKept(t, "registry reply is not certified", func(n *network, r *registrypb.CertifiedResponse) {
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

func TestAHashTreeMissingAVersionIsRefusedAndTheCopyKept(t *testing.T) {
	rejectedAndKept(t, "version 6 follows 4", func(_ *network, r *registrypb.CertifiedResponse) {
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

// The view answers node and operator records from one scan of them: the
// same value, the same writing version and the same absence as a read of
// that key at the view's version, including a record rewritten after it,
// one deleted before it and one that does not decode.
func TestTheViewReadsNodeAndOperatorRecordsAsTheCopyDoes(t *testing.T) {
	node := func(s string) string { return nns.NodeRecordKey(principal.SelfAuthenticating([]byte(s)).String()) }
	op := nns.NodeOperatorRecordKey(principal.SelfAuthenticating([]byte("op")).String())
	reg := registry.New()
	rec := nns.NodeRecordPB{NodeOperatorID: principal.SelfAuthenticating([]byte("op")).Bytes()}
	reg.Apply([]registry.Mutation{{Key: node("a"), Value: rec.Marshal()}, {Key: op, Value: (&nns.NodeOperatorRecordPB{DcID: "zh1"}).Marshal()}})
	reg.Apply([]registry.Mutation{{Key: node("b"), Value: rec.Marshal()}, {Key: node("garbled"), Value: []byte{0xff, 0xff}}})
	reg.Apply([]registry.Mutation{{Key: node("b"), Delete: true}})
	at := reg.Version()
	rec.Xnet = &nns.ConnectionEndpoint{IPAddr: "::1", Port: 1}
	reg.Apply([]registry.Mutation{{Key: node("a"), Value: rec.Marshal()}, {Key: node("c"), Value: rec.Marshal()}})
	n := serve(t, reg)
	c, _ := sync1(t, t.TempDir(), n.client, n.verifier, io.Discard)
	view := c.At(at)
	for _, key := range []string{node("a"), node("b"), node("c"), node("garbled"), node("never"), op} {
		want, wantAt, wantFound, err := c.Get(ctx(t), key, at)
		if err != nil {
			t.Fatal(err)
		}
		got, gotAt, gotFound, err := view.GetValue(ctx(t), key, 0)
		if err != nil || !bytes.Equal(got, want) || gotAt != wantAt || gotFound != wantFound {
			t.Errorf("%s: view %x at %d found %v (%v); copy %x at %d found %v", key, got, gotAt, gotFound, err, want, wantAt, wantFound)
		}
	}
}

// A caller whose context ended before the view read its records gets that
// error, and the next caller reads them: a cancelled first read is not the
// view's answer for every later one. Each of the view's two builds (the
// records GetValue answers from, the operator index) is checked on a fresh
// view, so the cancelled call is the first to build it.
func TestACancelledFirstReadOfTheViewIsReadAgainByTheNextCaller(t *testing.T) {
	opID := principal.SelfAuthenticating([]byte("op"))
	node := nns.NodeRecordKey(principal.SelfAuthenticating([]byte("a")).String())
	reg := registry.New()
	reg.Apply([]registry.Mutation{{Key: node, Value: (&nns.NodeRecordPB{NodeOperatorID: opID.Bytes()}).Marshal()}})
	n := serve(t, reg)
	c, res := sync1(t, t.TempDir(), n.client, n.verifier, io.Discard)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	reads := map[string]func(context.Context, *registrycopy.View) (string, error){
		"GetValue": func(ctx context.Context, v *registrycopy.View) (string, error) {
			_, _, found, err := v.GetValue(ctx, node, 0)
			return fmt.Sprint(found), err
		},
		"OperatorNodes": func(ctx context.Context, v *registrycopy.View) (string, error) {
			ids, err := v.OperatorNodes(ctx, opID.String())
			return fmt.Sprint(ids), err
		},
	}
	want := map[string]string{"GetValue": "true", "OperatorNodes": fmt.Sprint([]string{strings.TrimPrefix(node, nns.NodeRecordKey(""))})}
	for name, read := range reads {
		view := c.At(res.To)
		if got, err := read(cancelled, view); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %s, %v; want context.Canceled", name, got, err)
		}
		if got, err := read(ctx(t), view); err != nil || got != want[name] {
			t.Errorf("%s after a cancelled read: %s, %v; want %s", name, got, err, want[name])
		}
	}
}

func TestAColdSyncOfManyRepliesSaysHowItIsGettingOn(t *testing.T) {
	reg := seeded(40)
	reg.MaxChangesBytes = 64 // a few versions per reply
	n := serve(t, reg)
	var log bytes.Buffer
	dir := t.TempDir()
	c, res := sync1(t, dir, n.client, n.verifier, &log)
	c.Close()
	if res.To != 40 || res.Requests < 5 {
		t.Fatalf("sync %+v, want 0→40 in several replies", res)
	}
	if want := "registry copy: syncing: done, 40 of 40 versions in "; !strings.Contains(log.String(), want) {
		t.Errorf("the cold sync said %q; want a line with %q", log.String(), want)
	}
	// An update of one reply stays quiet.
	log.Reset()
	reg.Apply([]registry.Mutation{{Key: "key_001", Value: []byte("changed")}})
	if _, res = sync1(t, dir, n.client, n.verifier, &log); res.Requests != 1 || log.Len() != 0 {
		t.Errorf("an update of one reply (%+v) said %q; want nothing", res, log.String())
	}
}
