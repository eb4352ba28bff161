package nns

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// chunkedRegistry answers get_value for one key with the keys of its chunks
// and get_chunk with their content (or with tampered content).
type chunkedRegistry struct {
	chunks   [][]byte
	tamper   bool
	versions []uint64 // the version each get_value asked for
}

func (c *chunkedRegistry) Query(_ context.Context, _ principal.Principal, method string, arg []byte) ([]byte, error) {
	switch method {
	case "get_value":
		var req registrypb.RegistryGetValueRequest
		if err := proto.Unmarshal(arg, &req); err != nil {
			return nil, err
		}
		c.versions = append(c.versions, req.GetVersion().GetValue())
		keys := &registrypb.LargeValueChunkKeys{}
		for _, ch := range c.chunks {
			sum := sha256.Sum256(ch)
			keys.ChunkContentSha256S = append(keys.ChunkContentSha256S, sum[:])
		}
		return proto.Marshal(&registrypb.HighCapacityRegistryGetValueResponse{Version: 7,
			Content: &registrypb.HighCapacityRegistryGetValueResponse_LargeValueChunkKeys{LargeValueChunkKeys: keys}})
	case "get_chunk":
		var req GetChunkRequest
		if err := candid.Unmarshal(arg, &req); err != nil {
			return nil, err
		}
		for _, ch := range c.chunks {
			if sum := sha256.Sum256(ch); string(sum[:]) == string(*req.ContentSha256) {
				content := slices.Clone(ch)
				if c.tamper {
					content[0] ^= 1
				}
				return candid.Marshal(GetChunkResponse{Ok: &Chunk{Content: &content}})
			}
		}
		msg := "no such chunk"
		return candid.Marshal(GetChunkResponse{Err: &msg})
	}
	return nil, errors.New("unexpected method " + method)
}

func (c *chunkedRegistry) Call(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, errors.New("no update calls here")
}

func TestALargeValueIsFetchedChunkByChunkAndJoinedInOrder(t *testing.T) {
	reg := &chunkedRegistry{chunks: [][]byte{[]byte("first "), []byte("second "), []byte("third")}}
	v, at, found, err := RegistryClient{Caller: reg}.GetValue(context.Background(), "k", 0)
	if err != nil || !found || at != 7 || string(v) != "first second third" {
		t.Fatalf("got %q at %d (found %t): %v", v, at, found, err)
	}
}

func TestAChunkWhoseContentDoesNotMatchItsHashFailsTheRead(t *testing.T) {
	reg := &chunkedRegistry{chunks: [][]byte{[]byte("first "), []byte("second")}, tamper: true}
	_, _, _, err := RegistryClient{Caller: reg}.GetValue(context.Background(), "k", 0)
	if !errors.Is(err, ErrChunkHash) {
		t.Fatalf("a tampered chunk gave %v", err)
	}
}

func TestAPinnedClientReadsEveryKeyAtItsVersion(t *testing.T) {
	reg := &chunkedRegistry{chunks: [][]byte{[]byte("x")}}
	pinned := RegistryClient{Caller: reg}.At(41)
	ctx := context.Background()
	pinned.GetValue(ctx, "a", 0)
	pinned.NodeRecord(ctx, principal.Anonymous)
	pinned.GetValue(ctx, "c", 40) // an explicit version still wins
	RegistryClient{Caller: reg}.GetValue(ctx, "d", 0)
	if want := []uint64{41, 41, 40, 0}; !slices.Equal(reg.versions, want) {
		t.Fatalf("get_value asked for versions %v, want %v", reg.versions, want)
	}
}

// pagedChanges answers get_changes_since from a log, at most page versions
// per reply, as the registry bounds its replies.
type pagedChanges struct {
	latest uint64
	page   uint64
	asked  []uint64
}

func (p *pagedChanges) Query(_ context.Context, _ principal.Principal, method string, arg []byte) ([]byte, error) {
	var req registrypb.RegistryGetChangesSinceRequest
	if err := proto.Unmarshal(arg, &req); err != nil || method != "get_changes_since" {
		return nil, errors.New("unexpected call")
	}
	p.asked = append(p.asked, req.Version)
	resp := &registrypb.HighCapacityRegistryGetChangesSinceResponse{Version: p.latest}
	// version v writes replica_version_v<v>; version 4 deletes replica_version_v2.
	for v := req.Version + 1; v <= min(p.latest, req.Version+p.page); v++ {
		if v == 4 {
			resp.Deltas = append(resp.Deltas, &registrypb.HighCapacityRegistryDelta{Key: []byte("replica_version_v2"), Values: []*registrypb.HighCapacityRegistryValue{
				{Version: v, Content: &registrypb.HighCapacityRegistryValue_DeletionMarker{DeletionMarker: true}}}})
			continue
		}
		resp.Deltas = append(resp.Deltas, &registrypb.HighCapacityRegistryDelta{Key: []byte("replica_version_v" + string(rune('0'+v))), Values: []*registrypb.HighCapacityRegistryValue{
			{Version: v, Content: &registrypb.HighCapacityRegistryValue_Value{Value: []byte{}}}}})
	}
	return proto.Marshal(resp)
}

func (p *pagedChanges) Call(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, errors.New("no update calls here")
}

func TestChangesAreReadPageByPageUpToThePinnedVersion(t *testing.T) {
	p := &pagedChanges{latest: 7, page: 2}
	changes, at, err := RegistryClient{Caller: p}.At(5).GetChangesSince(context.Background(), 0)
	if err != nil || at != 5 {
		t.Fatalf("at %d: %v", at, err)
	}
	if !slices.Equal(p.asked, []uint64{0, 2, 4}) {
		t.Fatalf("asked from versions %v, want 0, 2, 4", p.asked)
	}
	if got := ElectedVersionsOf(changes); !slices.Equal(got, []string{"v1", "v3", "v5"}) {
		t.Fatalf("elected at version 5: %v (v2 was deleted at 4; v6, v7 come later)", got)
	}
	all, err := RegistryClient{Caller: &pagedChanges{latest: 7, page: 3}}.ElectedVersions(context.Background())
	if err != nil || !slices.Equal(all, []string{"v1", "v3", "v5", "v6", "v7"}) {
		t.Fatalf("elected at the latest version: %v %v", all, err)
	}
}

// legacyChanges answers get_changes_since in the older
// RegistryGetChangesSinceResponse form, whose RegistryValue carries
// timestamp_nanoseconds as field 4 (a varint), where the high-capacity form
// has large_value_chunk_keys (a message).
type legacyChanges struct{}

func (legacyChanges) Query(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	value := func(v []byte, version uint64, deleted bool) []byte {
		var b []byte
		if len(v) > 0 {
			b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), v)
		}
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), version)
		if deleted {
			b = protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.VarintType), 1)
		}
		return protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.VarintType), 1786014092906939149)
	}
	delta := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("replica_version_a"))
	delta = protowire.AppendBytes(protowire.AppendTag(delta, 2, protowire.BytesType), value([]byte{0x32, 0x01, 'x'}, 1, false))
	delta = protowire.AppendBytes(protowire.AppendTag(delta, 2, protowire.BytesType), value(nil, 2, true))
	resp := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 2)
	return protowire.AppendBytes(protowire.AppendTag(resp, 3, protowire.BytesType), delta), nil
}

func (legacyChanges) Call(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, errors.New("no update calls here")
}

func TestTheOlderChangesSinceFormReadsTheSame(t *testing.T) {
	changes, latest, err := RegistryClient{Caller: legacyChanges{}}.GetChangesSince(context.Background(), 0)
	if err != nil || latest != 2 || len(changes) != 2 {
		t.Fatalf("%v at %d: %+v", err, latest, changes)
	}
	if c := changes[0]; c.Version != 1 || c.Deleted || string(c.Value) != "\x32\x01x" {
		t.Errorf("first change %+v", c)
	}
	if c := changes[1]; c.Version != 2 || !c.Deleted {
		t.Errorf("second change %+v", c)
	}
}
