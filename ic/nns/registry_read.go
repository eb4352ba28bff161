package nns

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"alpnib.dev/ic/nns/registrypb"
)

// The registry's get_value, get_latest_version and get_changes_since take and
// return protobuf (ic_registry_transport.pb.v1), not Candid; get_chunk is
// Candid. A value of 10,000 bytes or more is stored in chunks: the reply
// carries the sha256 of each chunk instead of the value, and the reader
// fetches every chunk, checks its hash, and joins them.

// maxChunks bounds how many chunks one value may name (a chunk holds up to
// about 2 MB, so this is far above any record).
const maxChunks = 1024

// ErrChunkHash is returned when a chunk's content does not hash to the key it
// was fetched by.
var ErrChunkHash = errors.New("registry chunk does not match its sha256")

// At returns a client whose reads are all at registry version v (0: the
// latest at each call).
func (r RegistryClient) At(v uint64) RegistryClient {
	r.Version = v
	return r
}

// GetLatestVersion reads the registry's latest version (get_latest_version).
// Every registry mutation bumps it.
func (r RegistryClient) GetLatestVersion(ctx context.Context) (uint64, error) {
	raw, err := r.Caller.Query(ctx, registryID, "get_latest_version", nil)
	if err != nil {
		return 0, fmt.Errorf("get_latest_version: %w", err)
	}
	var resp registrypb.RegistryGetLatestVersionResponse
	if err := decode(raw, &resp); err != nil {
		return 0, fmt.Errorf("get_latest_version: %w", err)
	}
	return resp.Version, nil
}

// GetValue reads a record by key (get_value): at version, or at the client's
// Version when version is 0, or the latest when both are 0. at is the version
// that last wrote the value. found is false when the key is absent (never
// written, or deleted). A chunked value is fetched and joined.
func (r RegistryClient) GetValue(ctx context.Context, key string, version uint64) (value []byte, at uint64, found bool, err error) {
	if version == 0 {
		version = r.Version
	}
	req := &registrypb.RegistryGetValueRequest{Key: []byte(key)}
	if version != 0 {
		req.Version = wrapperspb.UInt64(version)
	}
	arg, err := proto.Marshal(req)
	if err != nil {
		return nil, 0, false, fmt.Errorf("get_value %s: encode request: %w", key, err)
	}
	raw, err := r.Caller.Query(ctx, registryID, "get_value", arg)
	if err != nil {
		return nil, 0, false, fmt.Errorf("get_value %s: %w", key, err)
	}
	var resp registrypb.HighCapacityRegistryGetValueResponse
	if err := decode(raw, &resp); err != nil {
		return nil, 0, false, fmt.Errorf("get_value %s: %w", key, err)
	}
	if e := resp.Error; e != nil {
		if e.Code == registrypb.RegistryError_KEY_NOT_PRESENT {
			return nil, 0, false, nil
		}
		return nil, 0, false, fmt.Errorf("get_value %s: registry error %s: %s", key, e.Code, e.Reason)
	}
	switch c := resp.Content.(type) {
	case *registrypb.HighCapacityRegistryGetValueResponse_LargeValueChunkKeys:
		v, err := r.dechunk(ctx, c.LargeValueChunkKeys)
		if err != nil {
			return nil, 0, false, fmt.Errorf("get_value %s: %w", key, err)
		}
		return v, resp.Version, true, nil
	case *registrypb.HighCapacityRegistryGetValueResponse_Value:
		return c.Value, resp.Version, true, nil
	}
	// No content: an empty value, as protobuf's defaults say.
	return []byte{}, resp.Version, true, nil
}

// GetChunk fetches one chunk of a large value by the sha256 of its content
// (get_chunk) and checks that the content hashes to it.
func (r RegistryClient) GetChunk(ctx context.Context, sha []byte) ([]byte, error) {
	resp, err := query[GetChunkResponse](ctx, r.Caller, registryID, "get_chunk", GetChunkRequest{ContentSha256: &sha})
	if err != nil {
		return nil, fmt.Errorf("get_chunk %x: %w", sha, err)
	}
	if resp.Err != nil {
		return nil, fmt.Errorf("get_chunk %x: registry: %s", sha, *resp.Err)
	}
	if resp.Ok == nil || resp.Ok.Content == nil {
		return nil, fmt.Errorf("get_chunk %x: reply without content", sha)
	}
	got := sha256.Sum256(*resp.Ok.Content)
	if !bytes.Equal(got[:], sha) {
		return nil, fmt.Errorf("get_chunk %x: %w (content hashes to %x)", sha, ErrChunkHash, got)
	}
	return *resp.Ok.Content, nil
}

// dechunk fetches and joins the chunks of a large value, in order.
func (r RegistryClient) dechunk(ctx context.Context, keys *registrypb.LargeValueChunkKeys) ([]byte, error) {
	shas := keys.GetChunkContentSha256S()
	if len(shas) > maxChunks {
		return nil, fmt.Errorf("large value names %d chunks (at most %d)", len(shas), maxChunks)
	}
	var out []byte
	for _, sha := range shas {
		c, err := r.GetChunk(ctx, sha)
		if err != nil {
			return nil, err
		}
		out = append(out, c...)
	}
	return out, nil
}

// recordUnmarshaler is a registry record message.
type recordUnmarshaler interface{ Unmarshal([]byte) error }

func getRecord(ctx context.Context, r RegistryClient, key string, into recordUnmarshaler) (bool, error) {
	v, _, ok, err := r.GetValue(ctx, key, 0)
	if err != nil || !ok {
		return false, err
	}
	if err := into.Unmarshal(v); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

// RegistryChange is one change of a key: its value at Version, or its
// deletion (Deleted, Value nil). A chunked value is already joined.
type RegistryChange struct {
	Key     string
	Version uint64
	Value   []byte
	Deleted bool
}

// GetChangesSince reads every registry change after version, up to the
// client's Version (or the latest), in version order per key. The registry
// answers get_changes_since with a bounded page, so this asks again from the
// last version it got until it has reached the target.
func (r RegistryClient) GetChangesSince(ctx context.Context, version uint64) (changes []RegistryChange, latest uint64, err error) {
	for {
		arg, err := proto.Marshal(&registrypb.RegistryGetChangesSinceRequest{Version: version})
		if err != nil {
			return nil, 0, fmt.Errorf("get_changes_since %d: encode request: %w", version, err)
		}
		raw, err := r.Caller.Query(ctx, registryID, "get_changes_since", arg)
		if err != nil {
			return nil, 0, fmt.Errorf("get_changes_since %d: %w", version, err)
		}
		var resp registrypb.HighCapacityRegistryGetChangesSinceResponse
		if err := decode(raw, &resp); err != nil {
			return nil, 0, fmt.Errorf("get_changes_since %d: %w", version, err)
		}
		if e := resp.Error; e != nil {
			return nil, 0, fmt.Errorf("get_changes_since %d: registry error %s: %s", version, e.Code, e.Reason)
		}
		target := resp.Version
		if r.Version != 0 {
			if r.Version > resp.Version {
				return nil, 0, fmt.Errorf("get_changes_since: version %d is beyond the latest (%d)", r.Version, resp.Version)
			}
			target = r.Version
		}
		page := version
		for _, d := range resp.Deltas {
			for _, v := range d.Values {
				if v.Version <= version {
					continue
				}
				page = max(page, v.Version)
				if v.Version > target {
					continue
				}
				c := RegistryChange{Key: string(d.Key), Version: v.Version}
				switch content := v.Content.(type) {
				case *registrypb.HighCapacityRegistryValue_DeletionMarker:
					c.Deleted = content.DeletionMarker
					if !c.Deleted {
						c.Value = []byte{}
					}
				case *registrypb.HighCapacityRegistryValue_Value:
					c.Value = content.Value
				case *registrypb.HighCapacityRegistryValue_LargeValueChunkKeys:
					if c.Value, err = r.dechunk(ctx, content.LargeValueChunkKeys); err != nil {
						return nil, 0, fmt.Errorf("get_changes_since %d: %s: %w", version, d.Key, err)
					}
				default:
					c.Value = []byte{}
				}
				changes = append(changes, c)
			}
		}
		if page >= target || page == version {
			// Done, or a page that brought nothing new (no progress).
			slices.SortStableFunc(changes, func(a, b RegistryChange) int {
				if c := strings.Compare(a.Key, b.Key); c != 0 {
					return c
				}
				return cmp.Compare(a.Version, b.Version)
			})
			return changes, target, nil
		}
		version = page
	}
}

// ElectedVersions lists the elected GuestOS versions: the ids of the
// replica_version_<id> records present at the client's Version (or the
// latest), sorted. This is how the registry canister itself decides that a
// version is elected; the blessed_replica_versions list is being retired
// upstream (docs/decisions.md). The registry has no key listing, so this
// reads the whole change log once, page by page (on mainnet that is many
// queries); to ask about one version, read its ReplicaVersionRecord.
func (r RegistryClient) ElectedVersions(ctx context.Context) ([]string, error) {
	changes, _, err := r.GetChangesSince(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("elected versions: %w", err)
	}
	return ElectedVersionsOf(changes), nil
}

// ElectedVersionsOf lists, from a change log, the ids of the
// replica_version_<id> records that are present after its last change.
func ElectedVersionsOf(changes []RegistryChange) []string {
	present := map[string]bool{}
	for _, c := range changes {
		if id, ok := strings.CutPrefix(c.Key, replicaVersionRecordPrefix); ok {
			present[id] = !c.Deleted
		}
	}
	var ids []string
	for id, ok := range present {
		if ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
