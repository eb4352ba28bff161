package qemu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

// A console past its bound goes whole to .1 and starts again empty, and a
// writer appending all the while (as QEMU does, append=on) goes on at the
// new end: no hole, no line of its written into the old copy after it.
func TestAConsolePastItsBoundIsRotatedUnderAnAppendingWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, consoleFile)
	os.WriteFile(path+".1", []byte("the last start's\n"), 0o640)
	w, err := openConsole(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(path + ".1"); !os.IsNotExist(err) {
		t.Errorf("a new start kept the last start's rotated console: %v", err)
	}
	if rotated, err := trimConsole(path, 1<<10); err != nil || rotated {
		t.Fatalf("an empty console was rotated (%v, %v)", rotated, err)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := 0; i < 2000; i++ {
			fmt.Fprintf(w, "line %d\n", i)
		}
	}()
	rotations := 0
	for done := false; !done; {
		select {
		case <-wrote:
			done = true
		default:
		}
		r, err := trimConsole(path, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if r {
			rotations++
		}
	}
	if rotations == 0 {
		t.Fatal("20 KiB went through a 1 KiB console and it was never rotated")
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if len(cur) > 1<<10 {
		t.Errorf("the console holds %d bytes after a trim, over its 1 KiB bound", len(cur))
	}
	// A line written between a copy and its truncate is lost (as with
	// logrotate's copytruncate); what is kept is whole lines, in order.
	for name, b := range map[string][]byte{"the console": cur, "the rotated console": old} {
		if len(b) == 0 {
			continue
		}
		last := -1
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			n, err := strconv.Atoi(strings.TrimPrefix(l, "line "))
			if err != nil || n <= last {
				t.Fatalf("%s holds %q after line %d: a hole, a torn or a repeated line", name, l, last)
			}
			last = n
		}
	}
	st, _ := os.Stat(path + ".1")
	if st.Mode().Perm() != 0o640 {
		t.Errorf("the rotated console is %v, want 0640", st.Mode().Perm())
	}
}

// The console a guest writes is root's, in root's folder: the guest's uid
// can neither read nor replace it, the host rotates it under the running
// QEMU, and QEMU writes on at the start of the emptied file.
func TestAGuestsConsoleIsRootsAndRotatesUnderItsQEMU(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	ctx := context.Background()
	spec := f.spec(t, "talker")
	st := started(t, ctx, v, spec, &logs)
	get(t, st.Endpoint, "/count", 3*time.Minute)
	path := v.ConsolePath(spec.AppID)
	if filepath.Dir(path) != v.appDir(spec.AppID) {
		t.Fatalf("the console is at %s, not in the app's root-owned folder", path)
	}
	var sys syscall.Stat_t
	if err := syscall.Lstat(path, &sys); err != nil {
		t.Fatal(err)
	}
	if sys.Uid != 0 || sys.Mode&0o777 != 0o640 || sys.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Errorf("the console is uid %d mode %o, want a root file of mode 0640", sys.Uid, sys.Mode)
	}
	id, err := v.ids.For(spec.Slot)
	if err != nil {
		t.Fatal(err)
	}
	setpriv := testenv.RequireCommand(t, "setpriv")
	as := func(args ...string) error {
		return exec.Command(setpriv, append([]string{"--reuid", strconv.Itoa(id.UID), "--regid", strconv.Itoa(id.GID), "--clear-groups"}, args...)...).Run()
	}
	if as("cat", path) == nil {
		t.Errorf("the guest's uid read its console")
	}
	if as("ln", "-sf", "/etc/shadow", path) == nil {
		t.Errorf("the guest's uid replaced its console")
	}

	waitConsole(t, v, spec.AppID, "counter listening on")
	if rotated, err := trimConsole(path, 0); err != nil || !rotated {
		t.Fatalf("trim of a console holding the boot: rotated %v, %v", rotated, err)
	}
	old, _ := os.ReadFile(path + ".1")
	if !strings.Contains(string(old), "counter listening on") {
		t.Errorf("the rotated console lacks the boot's lines:\n%s", old)
	}
	get(t, st.Endpoint, "/say?text=after-the-rotation", time.Minute)
	cur := waitConsole(t, v, spec.AppID, "after-the-rotation")
	if bytes.IndexByte([]byte(cur), 0) >= 0 || strings.Contains(cur, "counter listening on") {
		t.Errorf("QEMU wrote on past the emptied console's start (a hole, or the old lines kept):\n%q", cur)
	}
}

// waitConsole waits until the app's console holds s, and returns it.
func waitConsole(t testing.TB, v *VMM, app, s string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c := console(v, app)
		if strings.Contains(c, s) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console never said %q:\n%s", s, c)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
