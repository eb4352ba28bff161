package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"alpnib.dev/internal/flock"
	"alpnib.dev/nibrunner/perm"
)

// lockName is the file in state_dir that the serving daemon holds locked.
const lockName = "nibrunnerd.lock"

// errHeld is why a second serve on one state_dir stops.
var errHeld = errors.New("another nibrunnerd serves this host")

// lockStateDir takes the lock that makes one daemon the only one on
// stateDir: two would share its database, adopt the same guests and stop
// and restart each other's. The lock is an flock on state_dir/nibrunnerd.lock,
// so the kernel lets go of it when the daemon dies however it dies; the
// file holds the holder's pid, for the message a second daemon prints.
// The returned func releases it.
func lockStateDir(stateDir string) (func(), error) {
	if err := os.MkdirAll(stateDir, perm.Dir); err != nil {
		return nil, fmt.Errorf("make %s: %w", stateDir, err)
	}
	path := filepath.Join(stateDir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open the daemon's lock: %w", err)
	}
	held, err := flock.Try(f, flock.Exclusive)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !held {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		return nil, fmt.Errorf("%w%s: it holds %s; stop it first (systemctl stop nibrunnerd), or give this one a configuration with another paths.state_dir", errHeld, holder, path)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
