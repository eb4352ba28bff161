// Package planfile is the file `alp plan -out FILE` writes and `alp apply
// FILE` reads: for each planned proposal, the sha256 of the payload that was
// checked and the registry version the checks ran against. Apply refuses a
// plan when either has moved since, so what is submitted is exactly what a
// person reviewed, against the registry they reviewed it against (stale-plan
// protection, ours; the reference tool has none).
package planfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"alpnib.dev/internal/atomicfile"
)

// Format is the plan file format version this package writes and reads.
const Format = 1

// ErrPayloadMoved and ErrRegistryMoved are what Check wraps, so a caller
// can tell the two apart with errors.Is.
var (
	ErrPayloadMoved  = errors.New("payload changed since the plan")
	ErrRegistryMoved = errors.New("registry changed since the plan")
)

// File is a saved plan.
type File struct {
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	// Host is the IC HTTP interface the plan read from; applying against
	// another host is the caller's business to refuse.
	Host      string  `json:"host"`
	Proposals []Entry `json:"proposals"`
}

// Entry is one planned proposal.
type Entry struct {
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	PayloadSHA256 string `json:"payload_sha256"`
	// RegistryVersion is the registry's latest version when the preflight
	// for this proposal read live state.
	RegistryVersion uint64 `json:"registry_version"`
	// Verdict is the preflight verdict (ready, no-op, flagged, refused),
	// kept so apply can show what the plan concluded.
	Verdict string `json:"verdict"`
}

// Check refuses the entry when the payload the config declares now
// (currentHash) or the registry's latest version differs from what was
// planned. The error names both values and wraps ErrPayloadMoved or
// ErrRegistryMoved.
func (e Entry) Check(currentHash string, currentRegistryVersion uint64) error {
	if currentHash != e.PayloadSHA256 {
		return fmt.Errorf("proposal %q: %w (planned sha256 %s, config now %s); run alp plan again",
			e.Name, ErrPayloadMoved, e.PayloadSHA256, currentHash)
	}
	if currentRegistryVersion != e.RegistryVersion {
		return fmt.Errorf("proposal %q: %w (planned at registry version %d, now %d); run alp plan again",
			e.Name, ErrRegistryMoved, e.RegistryVersion, currentRegistryVersion)
	}
	return nil
}

// Lookup returns the entry for a proposal name.
func (f *File) Lookup(name string) (Entry, bool) {
	for _, e := range f.Proposals {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Write saves f atomically (2-space JSON, trailing newline), setting Format.
func Write(path string, f *File) error {
	f.Format = Format
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode plan file: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write plan file: %w", err)
	}
	return nil
}

// Read loads a plan file, refusing a format it does not know and a plan
// with no proposals or an entry without a payload hash.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan file: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("plan file %s: %w", path, err)
	}
	if f.Format != Format {
		return nil, fmt.Errorf("plan file %s: format %d, this alp reads format %d", path, f.Format, Format)
	}
	if len(f.Proposals) == 0 {
		return nil, fmt.Errorf("plan file %s: no proposal planned", path)
	}
	for _, e := range f.Proposals {
		if e.Name == "" || len(e.PayloadSHA256) != 64 {
			return nil, fmt.Errorf("plan file %s: entry %q has no payload sha256", path, e.Name)
		}
	}
	return &f, nil
}
