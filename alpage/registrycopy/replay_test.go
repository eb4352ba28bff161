package registrycopy_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/alpage/registrycopy"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// recorder keeps every get_certified_changes_since reply it passes on.
type recorder struct {
	nns.Caller
	mu      sync.Mutex
	replies [][]byte
}

func (r *recorder) Query(ctx context.Context, c principal.Principal, method string, arg []byte) ([]byte, error) {
	raw, err := r.Caller.Query(ctx, c, method, arg)
	if err == nil && method == "get_certified_changes_since" {
		r.mu.Lock()
		r.replies = append(r.replies, raw)
		r.mu.Unlock()
	}
	return raw, err
}

// replayer answers every get_certified_changes_since with one genuine
// reply captured earlier, whatever it is asked: an endpoint replaying an
// old answer.
type replayer struct {
	reply []byte
	asked []uint64
}

func (r *replayer) Query(_ context.Context, _ principal.Principal, method string, arg []byte) ([]byte, error) {
	if method != "get_certified_changes_since" {
		return nil, errors.New("replayer: only get_certified_changes_since")
	}
	var req registrypb.RegistryGetChangesSinceRequest
	if err := proto.Unmarshal(arg, &req); err != nil {
		return nil, err
	}
	r.asked = append(r.asked, req.Version)
	return r.reply, nil
}

func (r *replayer) Call(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, errors.New("replayer: no calls")
}

// The attack: a genuine reply from when the registry was at 4,
// replayed to a copy at 6. It was refused, the copy discarded, and the
// rebuild from version 0 took the same replay, so the copy went back to 4
// and the sync said nothing was wrong.
func TestAReplayedOlderGenuineReplyIsRefusedAndTheCopyKeepsItsVersion(t *testing.T) {
	n := serve(t, seeded(4))
	dir := t.TempDir()
	rec := &recorder{Caller: n.client.Caller}
	c, res := sync1(t, dir, nns.RegistryClient{Caller: rec}, n.verifier, io.Discard)
	c.Close()
	if res.To != 4 || len(rec.replies) != 1 {
		t.Fatalf("first sync %+v with %d replies, want version 4 in one", res, len(rec.replies))
	}
	old := rec.replies[0] // genuine: the registry at 4, since 0
	n.reg.Apply([]registry.Mutation{{Key: "key_000", Value: []byte("new")}})
	n.reg.Apply([]registry.Mutation{{Key: "key_001", Delete: true}}) // the removal a rollback would hide
	c, res = sync1(t, dir, n.client, n.verifier, io.Discard)
	c.Close()
	if res.To != 6 {
		t.Fatalf("second sync %+v, want version 6", res)
	}

	replay := &replayer{reply: old}
	refusedAndKept(t, dir, nns.RegistryClient{Caller: replay}, n.verifier, 6, "version 1 follows 6")
	for _, v := range replay.asked {
		if v != 6 {
			t.Errorf("the sync asked the replaying endpoint for the changes since %d: it went back from the copy's 6", v)
		}
	}
}

// certifiedDelta is shared/conformance/registry_certified_delta.json: a
// real mainnet get_certified_changes_since reply, for version 62953, from
// a registry at 62954.
type certifiedDelta struct {
	RequestedVersion       uint64 `json:"requested_version"`
	CertifiedLatestVersion uint64 `json:"certified_latest_version"`
	CertificateTimeNanos   int64  `json:"certificate_time_nanos"`
	CertificateHex         string `json:"certificate_hex"`
	HashTreeHex            string `json:"hash_tree_hex"`
}

// mainnetReply is the fixture as the registry canister's reply bytes and
// a verifier under the mainnet root key whose clock is the certificate's
// time.
func mainnetReply(t *testing.T) (certifiedDelta, []byte, *certificate.Verifier) {
	t.Helper()
	raw, err := os.ReadFile("testdata/registry_certified_delta.json")
	if err != nil {
		t.Fatal(err)
	}
	var f certifiedDelta
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	cert, err1 := hex.DecodeString(f.CertificateHex)
	treeBytes, err2 := hex.DecodeString(f.HashTreeHex)
	if err1 != nil || err2 != nil {
		t.Fatalf("fixture: %v %v", err1, err2)
	}
	var tree registrypb.MixedHashTree
	if err := proto.Unmarshal(treeBytes, &tree); err != nil {
		t.Fatal(err)
	}
	reply, err := proto.Marshal(&registrypb.CertifiedResponse{Certificate: cert, HashTree: &tree})
	if err != nil {
		t.Fatal(err)
	}
	v, err := certificate.NewVerifier(certificate.MainnetRootKeyDER(), certificate.Options{Now: func() time.Time { return time.Unix(0, f.CertificateTimeNanos) }})
	if err != nil {
		t.Fatal(err)
	}
	return f, reply, v
}

// copyAt makes an empty copy in a new folder and sets its version, as if
// it had been brought up to version before.
func copyAt(t *testing.T, version uint64) string {
	t.Helper()
	dir := t.TempDir()
	c, err := registrycopy.Open(ctx(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	path := c.Path()
	c.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE meta SET value = ? WHERE name = 'version'`, strconv.FormatUint(version, 10)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The real mainnet reply moves a copy at its requested version forward;
// the same reply replayed to that copy, or to a copy already past it, is
// refused and the copy keeps its version.
func TestTheMainnetReplyMovesTheCopyForwardOnceAndIsRefusedReplayed(t *testing.T) {
	f, reply, v := mainnetReply(t)
	src := nns.RegistryClient{Caller: &replayer{reply: reply}}

	dir := copyAt(t, f.RequestedVersion)
	c, res := sync1(t, dir, src, v, io.Discard)
	c.Close()
	if res.From != f.RequestedVersion || res.To != f.CertifiedLatestVersion || res.Deltas != 1 {
		t.Fatalf("sync %+v, want %d → %d in one delta", res, f.RequestedVersion, f.CertifiedLatestVersion)
	}
	refusedAndKept(t, dir, src, v, f.CertifiedLatestVersion, "registry reply is not certified")

	refusedAndKept(t, copyAt(t, f.CertifiedLatestVersion+7), src, v, f.CertifiedLatestVersion+7, "registry reply is not certified")
}
