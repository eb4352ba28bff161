package checkpoint

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/store"
)

// Info is a checkpoint that exists.
type Info struct {
	VolumeID string
	// Reference is where the checkpoint's object is: s3://bucket/key or
	// a file on this host.
	Reference string
	ReadyAt   time.Time
	// Key is the object's key in the checkpoint store.
	Key string `json:",omitempty"`
	// Size is the volume file's length; Data the bytes it holds.
	Size int64 `json:",omitempty"`
	Data int64 `json:",omitempty"`
	// Digest is the lowercase hex sha-256 of the object: what a volume's
	// initialContents names to restore from it.
	Digest string `json:",omitempty"`
}

// ObjectSuffix ends every checkpoint's key: the object is the sparse
// container (see WriteSparse) of the volume's ext4 image.
const ObjectSuffix = ".nibsparse"

// Options configure a Store.
type Options struct {
	// Dir keeps a checkpoint's local copy (<id>.img, sparse) and its record
	// (<id>.json), and scratch files of checkpoints being made.
	Dir string
	// Objects is the checkpoint store ([checkpoints] store_url) and Prefix
	// the key prefix its objects go under (<Prefix><id>.nibsparse); a
	// store several hosts share wants a prefix per host.
	Objects store.Streamer
	Prefix  string
	// FreezeTimeout bounds each freeze (DefaultFreezeTimeout when 0).
	FreezeTimeout time.Duration
	// UploadOnly keeps no local copy once a checkpoint is uploaded: the
	// object in the store is the checkpoint (scheduled checkpoints, kept
	// by the dozen, would otherwise hold as many copies on the host).
	UploadOnly bool
}

// Store makes, lists and deletes checkpoints: a consistent sparse copy of
// the volume kept on this host, uploaded to the checkpoint store.
type Store struct {
	opt Options
}

// Open returns the Store, first cleaning up after a daemon that died making
// checkpoints: scratch copies are removed, and the multipart upload each
// left incomplete is aborted — by the note it wrote of its key, not by
// prefix, since other hosts may upload to the same store at that moment.
func Open(ctx context.Context, opt Options) (*Store, error) {
	if opt.Objects == nil || opt.Dir == "" {
		return nil, errors.New("checkpoints: a folder and a store are required")
	}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	notes, _ := filepath.Glob(filepath.Join(opt.Dir, ".uploading-*"))
	for _, n := range notes {
		if key, err := os.ReadFile(n); err == nil && len(key) > 0 {
			if _, err := opt.Objects.AbortIncompleteAt(ctx, string(key)); err != nil {
				return nil, fmt.Errorf("checkpoints: abort the upload a stopped daemon left at %q: %w", key, err)
			}
		}
		os.Remove(n)
	}
	scratch, _ := filepath.Glob(filepath.Join(opt.Dir, ".tmp-*"))
	for _, p := range scratch {
		os.Remove(p)
	}
	return &Store{opt: opt}, nil
}

// List returns the checkpoints that were made, by id.
func (s *Store) List(ctx context.Context) (map[string]Info, error) {
	return atomicfile.ReadRecords[Info](s.opt.Dir, "checkpoints")
}

func (s *Store) key(id string) string        { return s.opt.Prefix + id + ObjectSuffix }
func (s *Store) local(id string) string      { return filepath.Join(s.opt.Dir, id+".img") }
func (s *Store) recordPath(id string) string { return filepath.Join(s.opt.Dir, id+".json") }

// Create makes checkpoint id of vol: a sparse copy (the guest frozen for
// it), then the upload of its sparse container to the checkpoint store,
// then the record that says it is ready. A Create cut short leaves no
// record, so the checkpoint is made again.
func (s *Store) Create(ctx context.Context, id string, vol Volume) (Info, error) {
	info, _, err := s.create(ctx, id, vol)
	return info, err
}

// CreateStats is Create that also says what the snapshot did.
func (s *Store) CreateStats(ctx context.Context, id string, vol Volume) (Info, SnapshotStats, error) {
	return s.create(ctx, id, vol)
}

func (s *Store) create(ctx context.Context, id string, vol Volume) (Info, SnapshotStats, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(s.opt.Dir, ".tmp-"+id+"-"+hex.EncodeToString(rnd[:])+".img")
	defer os.Remove(tmp)
	snap, err := Snapshot(ctx, vol, tmp, s.opt.FreezeTimeout)
	if err != nil {
		return Info{}, snap, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	if err := os.Rename(tmp, s.local(id)); err != nil {
		return Info{}, snap, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	key := s.key(id)
	note := filepath.Join(s.opt.Dir, ".uploading-"+id+"-"+hex.EncodeToString(rnd[:]))
	if err := atomicfile.WriteFile(note, []byte(key), 0o600); err != nil {
		return Info{}, snap, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	defer os.Remove(note)
	pr, pw := io.Pipe()
	written := make(chan struct{})
	sum := sha256.New()
	go func() {
		defer close(written)
		_, err := WriteSparse(ctx, io.MultiWriter(sum, pw), s.local(id))
		pw.CloseWithError(err)
	}()
	_, err = s.opt.Objects.PutStream(ctx, key, pr)
	pr.CloseWithError(errors.New("the upload ended"))
	<-written
	if err != nil {
		if s.opt.UploadOnly {
			os.Remove(s.local(id))
		}
		return Info{}, snap, fmt.Errorf("checkpoint %s: upload: %w", id, err)
	}
	if s.opt.UploadOnly {
		if err := os.Remove(s.local(id)); err != nil {
			return Info{}, snap, fmt.Errorf("checkpoint %s: remove the local copy once uploaded: %w", id, err)
		}
	}
	info := Info{VolumeID: vol.ID, Reference: s.opt.Objects.URL(key), ReadyAt: time.Now().UTC(), Key: key, Size: snap.Size, Data: snap.Data, Digest: hex.EncodeToString(sum.Sum(nil))}
	b, _ := json.Marshal(info)
	if err := atomicfile.WriteFile(s.recordPath(id), b, 0o600); err != nil {
		return Info{}, snap, fmt.Errorf("checkpoint %s: record it: %w", id, err)
	}
	return info, snap, nil
}

// Delete removes checkpoint id: its object, its local copy and its record
// (the record last, so a Delete cut short is done again).
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.opt.Objects.Delete(ctx, s.key(id)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete checkpoint %s: %w", id, err)
	}
	for _, p := range []string{s.local(id), s.recordPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete checkpoint %s: %w", id, err)
		}
	}
	return nil
}

// Objects is the store the checkpoints are uploaded to.
func (s *Store) Objects() store.Streamer { return s.opt.Objects }

// LocalPath is the file holding checkpoint id's copy on this host.
func (s *Store) LocalPath(id string) string { return s.local(id) }
