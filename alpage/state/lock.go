package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Lock is an exclusive claim on a state file, held by one alp process from
// reading state.json to writing it back. Without it two applies of the same
// proposal could both find no record and both submit, and a status that
// read the file before an apply recorded a submission would write the
// older file back over it. The claim is a file beside state.json
// (state.json.lock) created with O_EXCL, which works on every local file
// system and shows up in `ls` when something is holding it.
type Lock struct {
	path string
}

// LockedError is a state file another process is holding.
type LockedError struct {
	// Path is the lock file.
	Path string
	// Holder is what the holder wrote into it: pid, host and time.
	Holder string
}

func (e *LockedError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "an unknown process"
	}
	return fmt.Sprintf("state is locked by %s (%s); wait for that alp to finish, or remove %s if no alp is running", holder, e.Path, e.Path)
}

// LockPath is the lock file of the state file at statePath: beside the
// file a symlink at statePath leads to, so checkouts whose state.json
// links to one shared file take one lock, as they write one file (Save
// writes through the link).
func LockPath(statePath string) string {
	if target, err := filepath.EvalSymlinks(statePath); err == nil {
		statePath = target
	}
	return statePath + ".lock"
}

// Acquire claims the state file at statePath. A lock left behind by a
// process of this host that no longer runs (a kill -9, a power cut) is
// taken over; any other held lock is a *LockedError.
func Acquire(statePath string) (*Lock, error) {
	path := LockPath(statePath)
	for attempt := 0; ; attempt++ {
		err := create(path)
		if err == nil {
			return &Lock{path: path}, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("lock state: the folder of %s does not exist (%w); create it, or point --state at a state.json in an existing folder", statePath, err)
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock state: %w", err)
		}
		holder, _ := os.ReadFile(path)
		h := strings.TrimSpace(string(holder))
		if attempt == 0 && stale(h) {
			// Remove only if it is still the same stale file.
			if now, _ := os.ReadFile(path); string(now) == string(holder) {
				os.Remove(path)
			}
			continue
		}
		return nil, &LockedError{Path: path, Holder: h}
	}
}

func create(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	_, werr := fmt.Fprintf(f, "pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return werr
	}
	return nil
}

// stale reports whether holder names a process of this host that is gone
// or a zombie.
func stale(holder string) bool {
	var pid int
	var host, since string
	if _, err := fmt.Sscanf(holder, "pid %d on %s since %s", &pid, &host, &since); err != nil || pid <= 0 {
		return false
	}
	if me, _ := os.Hostname(); host != me {
		return false
	}
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	// A zombie (or a process being torn down) answers kill(0) but holds
	// nothing: it is an alp that exited and whose parent has not reaped
	// it yet, which is a dead holder.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && exited(stat)
}

// exited reports whether a /proc/PID/stat line is of a process that has
// exited: state Z (zombie) or X (dead). The state is the first field after
// the command name, which is in parentheses and may hold any byte, so it is
// read after the last ')'.
func exited(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(stat[i+1:])
	return len(f) > 0 && (string(f[0]) == "Z" || string(f[0]) == "X")
}

// Release gives the claim up. Releasing twice, or a lock whose folder is
// gone, is not an error.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unlock state: %w", err)
	}
	return nil
}

// Update is one locked read-modify-write of the state file at path: it
// claims the file, loads it, lets change edit it, and saves it when change
// reports a change. The state change sees is the one on disk at that
// moment, not one read earlier, so nothing recorded meanwhile is lost.
func Update(path string, change func(*State) (bool, error)) error {
	l, err := Acquire(path)
	if err != nil {
		return err
	}
	defer l.Release()
	s, err := Load(path)
	if err != nil {
		return err
	}
	changed, err := change(s)
	if err != nil || !changed {
		return err
	}
	return s.Save(path)
}
