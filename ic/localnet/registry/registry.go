// Package registry is an in-memory NNS registry for the local network: a
// versioned key-value store whose values are the registry's record protobufs,
// and the mutations alp proposes, each enforcing the invariants the real
// registry canister enforces (rs/registry/canister/src/mutations in
// dfinity/ic). Every successful mutation writes all its changes at one new
// registry version; a refused one writes nothing.
//
// It is the functional core behind the local registry canister and the
// registry-explorer stand-in: no I/O, safe for concurrent use.
package registry

import (
	"crypto/sha256"
	"slices"
	"sort"
	"strings"
	"sync"
)

// MinChunkableValueLen is the size from which the registry stores a value in
// chunks (MIN_CHUNKABLE_VALUE_LEN upstream, docs/decisions.md): get_value
// and get_changes_since then answer with the sha256 of each chunk, and
// get_chunk serves a chunk by its hash.
const MinChunkableValueLen = 10_000

// DefaultChunkSize is the largest chunk the registry writes (ours: upstream's
// chunk store has its own bound; a client only depends on the hashes).
const DefaultChunkSize = 1 << 20

// Entry is one version of one key; a nil Value is a deletion. A value of
// MinChunkableValueLen bytes or more also has ChunkKeys, the sha256 of each
// of its chunks in order.
type Entry struct {
	Version   uint64
	Value     []byte
	ChunkKeys [][]byte
}

// Mutation sets Key to Value, or deletes it when Delete is set.
type Mutation struct {
	Key    string
	Value  []byte
	Delete bool
}

// Registry is the versioned store. The zero value is not usable; call New.
type Registry struct {
	// ChunkSize is the largest chunk a large value is split into; set it
	// before the first write.
	ChunkSize int
	// MaxChangesBytes bounds a get_changes_since page
	// (DefaultMaxChangesBytes when zero).
	MaxChangesBytes int

	mu      sync.RWMutex
	version uint64
	log     map[string][]Entry
	chunks  map[[sha256.Size]byte][]byte

	membersMu sync.Mutex   // guards members, built under mu's read lock
	members   *memberIndex // SubnetOf's index, at members.version
}

// New returns an empty registry at version 0.
func New() *Registry {
	return &Registry{ChunkSize: DefaultChunkSize, log: map[string][]Entry{}, chunks: map[[sha256.Size]byte][]byte{}}
}

// Chunk returns the chunk whose content hashes to sha.
func (r *Registry) Chunk(sha []byte) ([]byte, bool) {
	if len(sha) != sha256.Size {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.chunks[[sha256.Size]byte(sha)]
	return c, ok
}

// chunkLocked stores v's chunks and returns their keys, or nil when v is
// small enough to be stored inline.
func (r *Registry) chunkLocked(v []byte) [][]byte {
	if len(v) < MinChunkableValueLen {
		return nil
	}
	size := r.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	var keys [][]byte
	for len(v) > 0 {
		n := min(size, len(v))
		sum := sha256.Sum256(v[:n])
		r.chunks[sum] = v[:n:n]
		keys = append(keys, sum[:])
		v = v[n:]
	}
	return keys
}

// Version is the latest registry version.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Get returns the latest value of key and the version that wrote it; ok is
// false when the key was never set or its latest entry is a deletion.
func (r *Registry) Get(key string) (value []byte, version uint64, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.getLocked(key, r.version)
}

// GetAt returns the value key had at registry version v.
func (r *Registry) GetAt(key string, v uint64) (value []byte, version uint64, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.getLocked(key, v)
}

// EntryAt returns the entry of key in force at registry version v (0: the
// latest); ok is false when there is none or it is a deletion.
func (r *Registry) EntryAt(key string, v uint64) (Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v == 0 {
		v = r.version
	}
	e, ok := r.entryLocked(key, v)
	return e, ok && e.Value != nil
}

func (r *Registry) entryLocked(key string, v uint64) (Entry, bool) {
	h := r.log[key]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Version <= v {
			return h[i], true
		}
	}
	return Entry{}, false
}

func (r *Registry) getLocked(key string, v uint64) ([]byte, uint64, bool) {
	e, ok := r.entryLocked(key, v)
	if !ok {
		return nil, 0, false
	}
	return e.Value, e.Version, e.Value != nil
}

// History returns every entry ever written to key, oldest first (nil when
// the key was never written).
func (r *Registry) History(key string) []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Entry(nil), r.log[key]...)
}

// Keys returns the keys with prefix whose latest entry is not a deletion,
// sorted.
func (r *Registry) Keys(prefix string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.keysLocked(prefix)
}

func (r *Registry) keysLocked(prefix string) []string {
	var out []string
	for k, h := range r.log {
		if strings.HasPrefix(k, prefix) && len(h) > 0 && h[len(h)-1].Value != nil {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Apply writes muts at one new version and returns it. An empty slice
// changes nothing and returns the current version.
func (r *Registry) Apply(muts []Mutation) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applyLocked(muts)
}

func (r *Registry) applyLocked(muts []Mutation) uint64 {
	if len(muts) == 0 {
		return r.version
	}
	r.version++
	for _, m := range muts {
		v := m.Value
		if m.Delete {
			v = nil
		} else if v == nil {
			v = []byte{} // an empty record is present, not deleted
		}
		r.log[m.Key] = append(r.log[m.Key], Entry{Version: r.version, Value: v, ChunkKeys: r.chunkLocked(v)})
	}
	return r.version
}

// update runs f under the write lock with a read view, then applies the
// mutations it returns unless it fails.
func (r *Registry) update(f func(v view) ([]Mutation, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	muts, err := f(view{r: r})
	if err != nil {
		return err
	}
	r.applyLocked(muts)
	return nil
}

// view reads the latest state while the write lock is held; with pending
// set (after), it reads the state as it will be once those mutations are
// applied, which is what the registry checks its invariants on.
type view struct {
	r       *Registry
	pending map[string]Mutation
}

// after is v as it will read once muts are applied.
func (v view) after(muts []Mutation) view {
	p := make(map[string]Mutation, len(muts))
	for _, m := range muts {
		p[m.Key] = m
	}
	return view{r: v.r, pending: p}
}

func (v view) get(key string) ([]byte, bool) {
	if m, ok := v.pending[key]; ok {
		return m.Value, !m.Delete
	}
	b, _, ok := v.r.getLocked(key, v.r.version)
	return b, ok
}

func (v view) keys(prefix string) []string {
	keys := v.r.keysLocked(prefix)
	if len(v.pending) == 0 {
		return keys
	}
	var out []string
	for _, k := range keys {
		if m, ok := v.pending[k]; !ok || !m.Delete {
			out = append(out, k)
		}
	}
	for k, m := range v.pending {
		if strings.HasPrefix(k, prefix) && !m.Delete && !slices.Contains(keys, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// DefaultMaxChangesBytes bounds one get_changes_since page: two thirds of
// the 2 MiB a reply may carry, as the canister's MAX_REGISTRY_DELTAS_SIZE.
const DefaultMaxChangesBytes = 2 * (2 << 20) / 3

// ChangesSince returns, for every key written after version, the entries
// written after it (oldest first), keys sorted; and the latest version. Like
// the canister it answers a page: whole versions, oldest first, until their
// keys and values reach MaxChangesBytes (at least one version), so a reader
// asks again from the last version it got.
func (r *Registry) ChangesSince(version uint64) (map[string][]Entry, []string, uint64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	limit := r.MaxChangesBytes
	if limit <= 0 {
		limit = DefaultMaxChangesBytes
	}
	size := map[uint64]int{}
	for k, h := range r.log {
		for _, e := range h {
			if e.Version > version {
				size[e.Version] += len(k) + len(e.Value)
			}
		}
	}
	last, total := version, 0
	for v := version + 1; v <= r.version; v++ {
		if total > 0 && total+size[v] > limit {
			break
		}
		total += size[v]
		last = v
	}
	out := map[string][]Entry{}
	var keys []string
	for k, h := range r.log {
		for _, e := range h {
			if e.Version > version && e.Version <= last {
				out[k] = append(out[k], e)
			}
		}
		if len(out[k]) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return out, keys, r.version
}

// KeyEntry is one key's entry in a version of the change log.
type KeyEntry struct {
	Key string
	Entry
}

// VersionChanges is what one registry version wrote, keys sorted.
type VersionChanges struct {
	Version uint64
	Changes []KeyEntry
}

// Changelog returns every version's changes, oldest first: what the
// registry canister certifies (its delta subtree).
func (r *Registry) Changelog() []VersionChanges {
	r.mu.RLock()
	defer r.mu.RUnlock()
	byVersion := map[uint64][]KeyEntry{}
	for k, h := range r.log {
		for _, e := range h {
			byVersion[e.Version] = append(byVersion[e.Version], KeyEntry{Key: k, Entry: e})
		}
	}
	out := make([]VersionChanges, 0, len(byVersion))
	for v, ch := range byVersion {
		sort.Slice(ch, func(i, j int) bool { return ch[i].Key < ch[j].Key })
		out = append(out, VersionChanges{Version: v, Changes: ch})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}
