// Package flock takes advisory whole-file locks (flock(2)) without
// waiting: the one place that knows which errors mean "another holder"
// and which are failures. Callers decide how long to keep trying.
package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Shared and Exclusive are the two kinds of lock.
const (
	Shared    = unix.LOCK_SH
	Exclusive = unix.LOCK_EX
)

// Try takes how (Shared or Exclusive) on f at once. held is false, with
// no error, when another open file holds a lock that excludes it; the lock
// goes when f is closed.
func Try(f *os.File, how int) (held bool, err error) {
	for {
		err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, err
}
