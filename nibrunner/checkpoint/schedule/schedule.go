// Package schedule takes checkpoints of a host's volumes on a schedule and
// keeps the newest of them: every Interval a volume is checkpointed into
// the checkpoint store, and once a new checkpoint is uploaded the oldest
// beyond Keep are deleted. A checkpoint that fails (the store is down, the
// volume is at work) is retried with backoff (nibrunner/backoff), and a
// failure never deletes anything: only a checkpoint uploaded whole makes
// an older one go.
//
// It is a component of its own, run by the daemon's manager (Run blocks
// until its context ends); it reads the host through Host and tells the
// report what it keeps (Taken).
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/clock"
)

// Policy is how often one volume is checkpointed and how many of its
// checkpoints are kept.
type Policy struct {
	Interval time.Duration
	Keep     int
	// Off: the volume is not checkpointed on a schedule; the checkpoints
	// it has are kept as they are.
	Off bool
}

// The defaults: daily, the last week kept.
const (
	DefaultInterval = 24 * time.Hour
	DefaultKeep     = 7
)

// DefaultRetry is the backoff of a failed checkpoint: 1 min, doubling, at
// most an hour apart.
var DefaultRetry = backoff.Policy{Initial: time.Minute, Max: time.Hour, Factor: 2}

// Host is what the schedule reads of the host its volumes are on
// (the daemon).
type Host interface {
	// Volumes lists the volumes on the host now.
	Volumes(ctx context.Context) ([]string, error)
	// VolumeToCopy says how to read volume id now (its file, and its
	// guest's freezer when one has it mounted), or why it cannot be
	// copied now (it is being grown).
	VolumeToCopy(ctx context.Context, id string) (checkpoint.Volume, error)
}

// Store keeps the scheduled checkpoints (*checkpoint.Store, opened on a
// folder and a key prefix of their own).
type Store interface {
	List(ctx context.Context) (map[string]checkpoint.Info, error)
	Create(ctx context.Context, id string, vol checkpoint.Volume) (checkpoint.Info, error)
	Delete(ctx context.Context, id string) error
}

// Event is what the schedule did, for a log or a test.
type Event struct {
	Volume string
	// Kind is "taken", "failed", "deleted" or "delete failed"; ID the
	// checkpoint's.
	Kind string
	ID   string
	Err  error
}

// Options configure a Schedule.
type Options struct {
	Store Store
	// Dir keeps what the schedule remembers between starts: when it first
	// saw each volume, which its first checkpoint is due an Interval after.
	Dir string
	// Default is every volume's policy but those Volumes names.
	Default Policy
	Volumes map[string]Policy
	Clock   clock.Clock
	Retry   backoff.Policy
	// Rescan is how often the host's volumes are listed again for new ones
	// (default a minute).
	Rescan time.Duration
	// OnEvent, when set, is told each checkpoint taken, failed or deleted.
	OnEvent func(Event)
	Logf    func(format string, args ...any)
}

// Taken is one scheduled checkpoint in the store.
type Taken struct {
	ID      string
	Key     string
	Digest  string
	TakenAt time.Time
}

// Schedule is the component. Make it with New.
type Schedule struct {
	opt Options

	mu sync.Mutex
	// taken is each volume's checkpoints, oldest first; firstSeen when
	// each volume was first seen; failures its failed tries in a row and
	// retryAt when it is tried again.
	taken     map[string][]Taken
	firstSeen map[string]time.Time
	failures  map[string]int
	retryAt   map[string]time.Time
}

// New returns the schedule opt describes. A policy with no Interval or
// Keep takes the default's.
func New(opt Options) (*Schedule, error) {
	if opt.Store == nil || opt.Dir == "" {
		return nil, errors.New("scheduled checkpoints: a store and a folder are required")
	}
	opt.Clock = clock.Or(opt.Clock)
	if opt.Retry.Initial <= 0 {
		opt.Retry = DefaultRetry
	}
	if opt.Rescan <= 0 {
		opt.Rescan = time.Minute
	}
	if opt.Logf == nil {
		opt.Logf = log.Printf
	}
	if opt.Default.Interval <= 0 {
		opt.Default.Interval = DefaultInterval
	}
	if opt.Default.Keep <= 0 {
		opt.Default.Keep = DefaultKeep
	}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("scheduled checkpoints: %w", err)
	}
	return &Schedule{opt: opt, taken: map[string][]Taken{}, firstSeen: map[string]time.Time{}, failures: map[string]int{}, retryAt: map[string]time.Time{}}, nil
}

// policy is volume id's policy.
func (s *Schedule) policy(id string) Policy {
	p, ok := s.opt.Volumes[id]
	if !ok {
		return s.opt.Default
	}
	if p.Interval <= 0 {
		p.Interval = s.opt.Default.Interval
	}
	if p.Keep <= 0 {
		p.Keep = s.opt.Default.Keep
	}
	return p
}

// Taken is volume id's scheduled checkpoints in the store, oldest first.
func (s *Schedule) Taken(id string) []Taken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Taken(nil), s.taken[id]...)
}

// idTimeLayout stamps a scheduled checkpoint's id with when it was taken:
// <volume>.<UTC time>, which no document's checkpoint id can be (they hold
// no dot), and which sorts as its time does.
const idTimeLayout = "20060102T150405Z"

func checkpointID(vol string, at time.Time) string { return vol + "." + at.UTC().Format(idTimeLayout) }

// takenAt reads the time back from a scheduled checkpoint's id.
func takenAt(id string) (time.Time, bool) {
	i := strings.LastIndexByte(id, '.')
	if i < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(idTimeLayout, id[i+1:])
	return t, err == nil
}

// Run takes the checkpoints until ctx ends, reading the host through h.
func (s *Schedule) Run(ctx context.Context, h Host) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	timer := s.opt.Clock.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
		}
		next := s.round(ctx, h)
		timer.Reset(max(clock.Until(s.opt.Clock, next), 0))
	}
}

// load reads the checkpoints the store holds and the volumes seen before.
func (s *Schedule) load(ctx context.Context) error {
	list, err := s.opt.Store.List(ctx)
	if err != nil {
		return fmt.Errorf("scheduled checkpoints: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, info := range list {
		at, ok := takenAt(id)
		if !ok {
			continue
		}
		s.taken[info.VolumeID] = append(s.taken[info.VolumeID], Taken{ID: id, Key: info.Key, Digest: info.Digest, TakenAt: at})
	}
	for _, ts := range s.taken {
		sort.Slice(ts, func(i, j int) bool { return ts[i].TakenAt.Before(ts[j].TakenAt) })
	}
	b, err := os.ReadFile(s.seenPath())
	if err == nil {
		_ = json.Unmarshal(b, &s.firstSeen)
	}
	return nil
}

// seenPath keeps firstSeen; not a .json, which the store would read as a
// checkpoint's record.
func (s *Schedule) seenPath() string { return filepath.Join(s.opt.Dir, "first-seen.state") }

// round checkpoints every volume that is due, deletes what is beyond each
// volume's Keep, and returns when the next round is due.
func (s *Schedule) round(ctx context.Context, h Host) time.Time {
	now := s.opt.Clock.Now()
	next := now.Add(s.opt.Rescan)
	vols, err := h.Volumes(ctx)
	if err != nil {
		s.opt.Logf("nibrunnerd: scheduled checkpoints: list the volumes: %v", err)
		return next
	}
	s.noteSeen(vols, now)
	for _, id := range vols {
		p := s.policy(id)
		if p.Off {
			continue
		}
		due := s.due(id, p)
		if due.After(now) {
			next = earliest(next, due)
			continue
		}
		if err := s.take(ctx, h, id, now); err != nil {
			if ctx.Err() != nil {
				return next
			}
			next = earliest(next, s.failed(id, now, err))
			continue
		}
		next = earliest(next, now.Add(p.Interval))
	}
	// Retention runs for every volume the store holds checkpoints of,
	// those deleted from the host too, and again each round until a
	// delete the store refused went through.
	s.mu.Lock()
	ids := make([]string, 0, len(s.taken))
	for id := range s.taken {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		if p := s.policy(id); !p.Off {
			s.prune(ctx, id, p.Keep)
		}
	}
	return next
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// noteSeen records when each of vols was first seen.
func (s *Schedule) noteSeen(vols []string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, id := range vols {
		if _, ok := s.firstSeen[id]; !ok {
			s.firstSeen[id] = now.UTC()
			changed = true
		}
	}
	if !changed {
		return
	}
	b, _ := json.Marshal(s.firstSeen)
	if err := atomicfile.WriteFile(s.seenPath(), b, 0o600); err != nil {
		s.opt.Logf("nibrunnerd: scheduled checkpoints: %v", err)
	}
}

// due is when volume id is next checkpointed: an Interval after its last
// checkpoint (or after it was first seen), or when its failed one is
// tried again.
func (s *Schedule) due(id string, p Policy) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.retryAt[id]; ok {
		return at
	}
	last := s.firstSeen[id]
	if ts := s.taken[id]; len(ts) > 0 {
		last = ts[len(ts)-1].TakenAt
	}
	return last.Add(p.Interval)
}

// take checkpoints volume id now.
func (s *Schedule) take(ctx context.Context, h Host, id string, now time.Time) error {
	vol, err := h.VolumeToCopy(ctx, id)
	if err != nil {
		return err
	}
	cid := checkpointID(id, now)
	info, err := s.opt.Store.Create(ctx, cid, vol)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.taken[id] = append(s.taken[id], Taken{ID: cid, Key: info.Key, Digest: info.Digest, TakenAt: now.UTC()})
	delete(s.failures, id)
	delete(s.retryAt, id)
	s.mu.Unlock()
	s.event(Event{Volume: id, Kind: "taken", ID: cid})
	return nil
}

// failed records a failed checkpoint of volume id and returns when it is
// tried again.
func (s *Schedule) failed(id string, now time.Time, err error) time.Time {
	s.mu.Lock()
	s.failures[id]++
	at := now.Add(s.opt.Retry.Delay(s.failures[id]))
	s.retryAt[id] = at
	n := s.failures[id]
	s.mu.Unlock()
	s.opt.Logf("nibrunnerd: the scheduled checkpoint of volume %s failed (%d in a row); it is tried again at %s, and no older one is deleted meanwhile: %v", id, n, at.UTC().Format(time.RFC3339), err)
	s.event(Event{Volume: id, Kind: "failed", Err: err})
	return at
}

// prune deletes volume id's oldest checkpoints beyond keep. One the store
// refuses to delete stays listed, and is deleted again next round.
func (s *Schedule) prune(ctx context.Context, id string, keep int) {
	s.mu.Lock()
	ts := s.taken[id]
	var extra []Taken
	if len(ts) > keep {
		extra = append(extra, ts[:len(ts)-keep]...)
	}
	s.mu.Unlock()
	for _, t := range extra {
		if err := s.opt.Store.Delete(ctx, t.ID); err != nil {
			s.opt.Logf("nibrunnerd: scheduled checkpoints: delete %s of volume %s, beyond the %d kept: %v", t.ID, id, keep, err)
			s.event(Event{Volume: id, Kind: "delete failed", ID: t.ID, Err: err})
			return
		}
		s.mu.Lock()
		cur := s.taken[id]
		for i := range cur {
			if cur[i].ID == t.ID {
				s.taken[id] = append(cur[:i:i], cur[i+1:]...)
				break
			}
		}
		if len(s.taken[id]) == 0 {
			delete(s.taken, id)
		}
		s.mu.Unlock()
		s.event(Event{Volume: id, Kind: "deleted", ID: t.ID})
	}
}

func (s *Schedule) event(e Event) {
	if s.opt.OnEvent != nil {
		s.opt.OnEvent(e)
	}
}
