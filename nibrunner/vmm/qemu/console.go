package qemu

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The guest's serial console is a file in the app's runtime folder, which
// is root's, not in vm/, which the guest's uid owns: the host opens it and
// hands QEMU the descriptor (-add-fd, then -chardev file on /dev/fdset/N),
// so nothing the guest's uid plants can stand in its place, and the host
// reads it back by a path only root can change.
//
// QEMU appends (append=on), so the file can be emptied under it: whenever
// it grows past consoleMax, what it holds is copied to consoleFile+".1"
// and it is truncated, as logrotate's copytruncate does (a line written
// between the copy and the truncate is lost). The jail's RLIMIT_FSIZE
// stays the hard stop between two looks.
const (
	// consoleSet is the QEMU fdset the console's descriptor is added to.
	consoleSet = 1
	// consoleMax bounds the console before it is rotated; consoleEvery is
	// how often its size is looked at.
	consoleMax   = 8 << 20
	consoleEvery = 5 * time.Second
)

// consoleArgs are QEMU's arguments for a console written to the
// descriptor in fdset consoleSet.
func consoleArgs() []string {
	return []string{
		"-chardev", fmt.Sprintf("file,id=con,path=/dev/fdset/%d,append=on", consoleSet),
		"-serial", "chardev:con",
	}
}

// addFdArgs hands QEMU the console's descriptor, the nth of those it is
// handed.
func addFdArgs(n int) []string {
	return []string{"-add-fd", fmt.Sprintf("fd=%s,set=%d", fdArg(n), consoleSet)}
}

// openConsole makes the console at path new and empty (a start begins a
// new one, and its rotated lines go) and opens it for QEMU to append to.
func openConsole(path string) (*os.File, error) {
	if err := os.Remove(path + ".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the last console's older lines: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open the console: %w", err)
	}
	return f, nil
}

// trimConsole rotates the console at path when it holds more than max
// bytes: its contents go to path.1, replacing what was there, and it is
// emptied. It reports whether it rotated.
func trimConsole(path string, max int64) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("open the console to bound it: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat the console: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() <= max {
		return false, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".console-*")
	if err != nil {
		return false, fmt.Errorf("rotate the console: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, io.NewSectionReader(f, 0, st.Size()))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o640)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path+".1")
	}
	if err != nil {
		return false, fmt.Errorf("rotate the console: %w", err)
	}
	if err := f.Truncate(0); err != nil {
		return false, fmt.Errorf("empty the rotated console: %w", err)
	}
	return true, nil
}

// keepConsole bounds the console at path every so often until done is
// closed.
func keepConsole(path string, done <-chan struct{}) {
	t := time.NewTicker(consoleEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if _, err := trimConsole(path, consoleMax); err != nil {
				log.Printf("nibrunnerd: %s: %v", path, err)
			}
		}
	}
}
