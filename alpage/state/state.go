// Package state reads and writes state.json, alp's record of what it
// submitted: per proposal its id, payload hash, submitter and last known
// status, and per AMD chip the verdict KDS gave. The file is committed to
// git beside the configuration, so it is written deterministically (sorted
// keys, 2-space indent, trailing newline) and atomically, and no entry is
// ever lost or moved backwards.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"alpnib.dev/internal/atomicfile"
)

// State is the whole of state.json. Fields alp does not know (a newer
// tool's, a person's) are kept and written back after the known ones, at
// every level: the file is shared history, not alp's alone.
type State struct {
	// Network is the network the proposals were made on (Bind); nil in a
	// file no networked command has written yet.
	Network   *Network             `json:"network,omitempty"`
	Proposals map[string]*Proposal `json:"proposals"`
	Chips     map[string]*Chip     `json:"chips,omitempty"`

	unknown unknownFields
}

// Proposal is what alp recorded about one submitted proposal.
type Proposal struct {
	Kind          string `json:"kind"`
	ProposalID    uint64 `json:"proposal_id"`
	PayloadSHA256 string `json:"payload_sha256"`
	// DeclaredSHA256 is the sha256 of the payload the declaration alone
	// makes (built offline, inheriting nothing from the live registry),
	// when that is not PayloadSHA256: an update_subnet payload inherits
	// parts of the live record, so an offline command (alp list) compares
	// the declaration by this hash.
	DeclaredSHA256 string `json:"declared_sha256,omitempty"`
	SubmittedBy    string `json:"submitted_by"`
	Neuron         uint64 `json:"neuron"`
	Host           string `json:"host"`
	SubmittedAt    Time   `json:"submitted_at"`
	// Forced records an import whose declared kind did not match the
	// proposal's action and that --force recorded anyway: what differed.
	Forced string `json:"forced,omitempty"`
	// Uncompared records an import whose action or payload could not be
	// compared with what the config declares: what, and why.
	Uncompared string `json:"uncompared,omitempty"`
	Status     Status `json:"status,omitempty"`
	ResolvedAt Time   `json:"resolved_at,omitempty"`

	unknown unknownFields
}

// Chip is a positive AMD KDS verdict for one chip id (hex), kept forever
// unless `alp reconcile --refresh-chips` sees it refused.
type Chip struct {
	Verified bool `json:"verified"`
	// Product is omitted when empty, as the reference tool wrote it.
	Product    string `json:"product,omitempty"`
	VerifiedAt Time   `json:"verified_at"`

	unknown unknownFields
}

// Time is a timestamp as state.json holds it, kept exactly as written: alp
// writes RFC 3339 in UTC to the second, but the reference tool recorded
// whatever it was given, so a file may hold "" or free text ("2026-07-17,
// by hand"). Such a value is shown as it is and never rewritten.
type Time string

// TimeOf is t as alp writes it.
func TimeOf(t time.Time) Time { return Time(t.UTC().Truncate(time.Second).Format(time.RFC3339)) }

// Parsed reads t as RFC 3339; ok is false for "" and for free text.
func (t Time) Parsed() (time.Time, bool) {
	v, err := time.Parse(time.RFC3339Nano, string(t))
	return v, err == nil
}

// Status is a proposal's lifecycle status as recorded.
type Status string

// The statuses, in lifecycle order. Executed, rejected and failed are
// terminal.
const (
	StatusOpen     Status = "open"
	StatusAdopted  Status = "adopted"
	StatusExecuted Status = "executed"
	StatusRejected Status = "rejected"
	StatusFailed   Status = "failed"
)

// Terminal reports whether no later status can follow s.
func (s Status) Terminal() bool {
	return s == StatusExecuted || s == StatusRejected || s == StatusFailed
}

func (s Status) rank() int {
	switch s {
	case StatusOpen:
		return 1
	case StatusAdopted:
		return 2
	case StatusExecuted, StatusRejected, StatusFailed:
		return 3
	}
	return 0
}

// Valid reports whether s is one of the recorded statuses (or empty).
func (s Status) Valid() bool { return s == "" || s.rank() > 0 }

// New returns an empty state.
func New() *State { return &State{Proposals: map[string]*Proposal{}} }

// Load reads path; a missing file is an empty state.
func Load(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse decodes state.json content; name is used in errors. A key that
// appears twice in one object (a proposal recorded twice, or one field
// twice) is refused naming the key and its line: JSON decoders keep one of
// the two silently, and which one was meant only a person can say.
func Parse(name string, data []byte) (*State, error) {
	s := New()
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("state %s: %s; fix or restore the file from git", name, describeJSONError(data, err))
	}
	objects, err := scanObjects(data)
	if err != nil {
		return nil, fmt.Errorf("state %s: %v; fix or restore the file from git", name, err)
	}
	if err := s.keepUnknown(data, objects); err != nil {
		return nil, fmt.Errorf("state %s: %v", name, err)
	}
	if s.Proposals == nil {
		s.Proposals = map[string]*Proposal{}
	}
	for proposal, p := range s.Proposals {
		if p == nil {
			return nil, fmt.Errorf("state %s: proposal %q is null; fix or restore the file from git", name, proposal)
		}
		if !p.Status.Valid() {
			return nil, fmt.Errorf("state %s: proposal %q has unknown status %q (want open, adopted, executed, rejected or failed)", name, proposal, p.Status)
		}
	}
	for chip, c := range s.Chips {
		if c == nil {
			return nil, fmt.Errorf("state %s: chip %q is null; fix or restore the file from git", name, chip)
		}
	}
	return s, nil
}

func describeJSONError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return err.Error()
	}
	line := 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
	return fmt.Sprintf("line %d: %v", line, err)
}

// Marshal renders the state as it is written: sorted keys, 2-space indent,
// trailing newline.
func (s *State) Marshal() ([]byte, error) {
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return append(out, '\n'), nil
}

// Save writes the state to path atomically: a crash leaves the old file or
// the new one, never a mix. An existing file keeps its permissions, and a
// path that is a symbolic link has its target rewritten (the rename would
// otherwise replace the link with a file and leave the target, which other
// checkouts may read, behind); a new file is 0644.
func (s *State) Save(path string) error {
	data, err := s.Marshal()
	if err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
		if st, err := os.Stat(target); err == nil {
			perm = st.Mode().Perm()
		}
	}
	if err := atomicfile.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// Observe records a status read back from governance for proposal name at
// time at, and reports whether anything changed. Status only moves forward:
// a terminal status is never overwritten, an empty observation never clears
// one, and an earlier lifecycle status never replaces a later one.
// resolved_at is set when a terminal status is first recorded.
func (s *State) Observe(name string, st Status, at time.Time) bool {
	p := s.Proposals[name]
	if p == nil || st == "" || !st.Valid() {
		return false
	}
	if p.Status.Terminal() || st == p.Status || st.rank() < p.Status.rank() {
		return false
	}
	p.Status = st
	if st.Terminal() && p.ResolvedAt == "" {
		p.ResolvedAt = TimeOf(at)
	}
	return true
}

// Record adds the submission of proposal name. It refuses to replace an
// entry that is terminal, since a proposal's payload on-chain is immutable.
func (s *State) Record(name string, p *Proposal) error {
	if prev := s.Proposals[name]; prev != nil && prev.Status.Terminal() {
		return fmt.Errorf("proposal %q is already recorded as %s (proposal %d); rename the proposal block to submit a new one", name, prev.Status, prev.ProposalID)
	}
	s.Proposals[name] = p
	return nil
}

// Import adopts an already submitted proposal into the state, like
// terraform import. It refuses proposal id 0 and a name already recorded.
func (s *State) Import(name string, p *Proposal) error {
	if p.ProposalID == 0 {
		return fmt.Errorf("import %q: proposal id 0 is not a proposal", name)
	}
	if prev := s.Proposals[name]; prev != nil {
		return fmt.Errorf("import %q: already recorded as proposal %d; remove that entry first if it is wrong", name, prev.ProposalID)
	}
	s.Proposals[name] = p
	return nil
}
