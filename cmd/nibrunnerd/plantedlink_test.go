package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/jail"
)

// flipperEnv asks the test binary to be the flipper (see runFlipper).
const flipperEnv = "NIBRUNNERD_TEST_FLIPPER"

// Of the flipper's vm/: pairs of names it swaps without end, one a file
// or folder of its own and the other a link to a canary of root's.
const (
	flipFiles = 40
	flipDirs  = 8
)

// runFlipperIfAsked runs the flipper when the test binary was started as
// one, and never returns then.
func runFlipperIfAsked() {
	if os.Getenv(flipperEnv) == "" {
		return
	}
	runFlipper()
	os.Exit(0)
}

// runFlipper is what a compromised QEMU can do in the only folder it may
// write, vm/ (fd 3, as its jail binds it; this uid cannot reach it by
// path): swap, as fast as it can, each of its files and folders with a
// link of its own to a file or folder of root's (renameat2
// RENAME_EXCHANGE, which QEMU's -sandbox allows), so that root, walking
// or opening by path, finds a file and then acts on the link.
func runFlipper() {
	const vm = 3
	var pairs [][2]string
	for i := 0; i < flipFiles; i++ {
		pairs = append(pairs, [2]string{"f" + strconv.Itoa(i), "f" + strconv.Itoa(i) + "-link"})
	}
	for i := 0; i < flipDirs; i++ {
		pairs = append(pairs, [2]string{"d" + strconv.Itoa(i), "d" + strconv.Itoa(i) + "-link"})
	}
	pairs = append(pairs, [2]string{"console.log", "console.alt"})
	for {
		for _, p := range pairs {
			// A pair that cannot be swapped now is tried again on the
			// next round: the flipper keeps on until it is killed. A
			// start of the app removes the console for QEMU to make anew;
			// the guest's uid makes it again, as its QEMU would.
			err := unix.Renameat2(vm, p[0], vm, p[1], unix.RENAME_EXCHANGE)
			if errors.Is(err, unix.ENOENT) && p[0] == "console.log" {
				if fd, err := unix.Openat(vm, p[0], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600); err == nil {
					unix.Write(fd, []byte("guest's own line\n"))
					unix.Close(fd)
				}
			}
		}
	}
}

// TestAGuestsPlantedLinksAreNeverFollowedByServeOrLogs is issue 42's
// finding 1. A guest's uid owns its vm/ and swaps everything in it for
// links to root's canaries (files, folders, and a root-only secret in
// place of its console) while serve starts ten times over its runtime_dir
// and `nibrunnerd logs` reads the app's logs after each start. No canary
// changes mode, and the secret is never printed.
func TestAGuestsPlantedLinksAreNeverFollowedByServeOrLogs(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64")
	root, cfgPath, doc, in, app := fakeHost(t)
	// A guest image that is there: the app is on-request and never asked
	// for, so no QEMU boots it.
	img := filepath.Join(root, "guest")
	os.MkdirAll(img, 0o755)
	for _, f := range []string{"vmlinux", "initrd", "base.squashfs"} {
		os.WriteFile(filepath.Join(img, f), nil, 0o644)
	}
	os.WriteFile(filepath.Join(img, "image.json"), fmt.Appendf(nil, `{"version":"gi-0000000000000000","kernel":%q,"initrd":%q,"base":%q}`,
		filepath.Join(img, "vmlinux"), filepath.Join(img, "initrd"), filepath.Join(img, "base.squashfs")), 0o644)
	in["desiredState"] = "on-request"
	writeDoc(t, root, doc)
	const slot = 7
	os.MkdirAll(filepath.Join(root, "state"), 0o750)
	st, err := db.Open(context.Background(), filepath.Join(root, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutSlots(context.Background(), map[string]int{app: slot}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	uid, gid := jail.DefaultUIDBase+slot, jail.DefaultGIDBase+slot

	// Root's canaries, outside every folder serve keeps.
	canaries := filepath.Join(root, "canaries")
	os.MkdirAll(canaries, 0o755)
	modes := map[string]fs.FileMode{}
	for i := 0; i < flipFiles; i++ {
		p := filepath.Join(canaries, "c"+strconv.Itoa(i))
		os.WriteFile(p, nil, 0o644)
		modes[p] = 0o644
	}
	for i := 0; i < flipDirs; i++ {
		d := filepath.Join(canaries, "d"+strconv.Itoa(i))
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "inside"), nil, 0o644)
		modes[d], modes[filepath.Join(d, "inside")] = 0o755, 0o644
	}
	b := make([]byte, 8)
	rand.Read(b)
	mark := "ROOT-ONLY-" + hex.EncodeToString(b)
	secret := filepath.Join(canaries, "shadow")
	os.WriteFile(secret, []byte(mark+"\n"), 0o600)
	modes[secret] = 0o600
	for p, m := range modes {
		if err := os.Chmod(p, m); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}

	// The guest's vm/, as its jail leaves it: its uid's, 0700, each name
	// paired with a link of its own to a canary.
	appDir := filepath.Join(root, "run", app)
	vm := filepath.Join(appDir, "vm")
	os.MkdirAll(vm, 0o750)
	old := unix.Umask(0)
	plant := func(name string, mk func(string) error, link string) {
		t.Helper()
		if err := mk(filepath.Join(vm, name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(link, filepath.Join(vm, name+"-link")); err != nil {
			t.Fatal(err)
		}
	}
	file := func(p string) error { return os.WriteFile(p, []byte("guest's own line\n"), 0o666) }
	for i := 0; i < flipFiles; i++ {
		plant("f"+strconv.Itoa(i), file, filepath.Join(canaries, "c"+strconv.Itoa(i)))
	}
	for i := 0; i < flipDirs; i++ {
		name := "d" + strconv.Itoa(i)
		plant(name, func(p string) error {
			if err := os.Mkdir(p, 0o777); err != nil {
				return err
			}
			return file(filepath.Join(p, "inside"))
		}, filepath.Join(canaries, name))
	}
	// The console's pair is console.log and console.alt.
	if err := file(filepath.Join(vm, "console.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(vm, "console.alt")); err != nil {
		t.Fatal(err)
	}
	unix.Umask(old)
	filepath.WalkDir(vm, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, uid, gid)
		}
		return err
	})
	os.Chmod(vm, 0o700)
	os.WriteFile(filepath.Join(appDir, "tenant.log"), []byte("2026-12-05T09:00:00Z stdout tenant's line\n"), 0o640)
	// The console itself is root's, beside tenant.log (vm/qemu hands QEMU
	// its descriptor); what the guest keeps in vm/ under that name is
	// never read.
	os.WriteFile(filepath.Join(appDir, "console.log"), []byte("console's own line\n"), 0o640)

	// The flipper, as the guest's uid, from a copy of this binary it can
	// run, holding vm/ open as its jail would.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.MkdirTemp("", "flipper")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	os.Chmod(bin, 0o755)
	copyFile(t, exe, filepath.Join(bin, "flipper"))
	vmf, err := os.Open(vm)
	if err != nil {
		t.Fatal(err)
	}
	defer vmf.Close()
	flipper := exec.Command(filepath.Join(bin, "flipper"))
	flipper.Env = append(os.Environ(), flipperEnv+"=1")
	flipper.ExtraFiles = []*os.File{vmf}
	flipper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var flipErr strings.Builder
	flipper.Stderr = &flipErr
	if err := flipper.Start(); err != nil {
		t.Fatal(err)
	}
	// flipDone closes once the flipper has ended (flipWaitErr says how),
	// so both the check below and the cleanup may wait on it.
	flipDone := make(chan struct{})
	var flipWaitErr error
	go func() { flipWaitErr = flipper.Wait(); close(flipDone) }()
	defer func() {
		flipper.Process.Kill()
		<-flipDone
	}()

	daemonLog := &testenv.SyncBuffer{}
	log.SetOutput(daemonLog)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	logsRead, consoleRead := 0, 0
	for start := 1; start <= 10; start++ {
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- serve(ctx, cfgPath, "qemu", 0, false) }()
		// This serve is up once it answers: past its folders, its VMM
		// and its first report.
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if out, err := ctl("ps", "--config", cfgPath); err == nil && strings.Contains(out, app) {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("start %d: ps never showed %s: %q, %v", start, app, out, err)
			}
		}
		// A start of the app (when the process's earlier tests left the
		// guest image built, serve boots it) makes its console anew; the
		// line is appended again, as QEMU would write one.
		if f, err := os.OpenFile(filepath.Join(appDir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640); err == nil {
			f.WriteString("console's own line\n")
			f.Close()
		}
		for i := 0; i < 20; i++ {
			out, err := ctl("logs", app, "--config", cfgPath)
			if strings.Contains(out, mark) || err != nil && strings.Contains(err.Error(), mark) {
				t.Errorf("start %d: logs printed the root-only file the guest linked in place of its console:\n%s%v", start, out, err)
			}
			if err == nil {
				logsRead++
				if strings.Contains(out, "console's own line") {
					consoleRead++
				}
				if strings.Contains(out, "guest's own line") {
					t.Errorf("start %d: logs printed the file the guest made in vm/ as its console:\n%s", start, out)
				}
			}
		}
		cancel()
		if err := <-served; err != nil {
			t.Fatalf("start %d: serve: %v", start, err)
		}
		select {
		case <-flipDone:
			t.Fatalf("the flipper stopped: %v: %s", flipWaitErr, flipErr.String())
		default:
		}
	}
	t.Logf("logs answered %d of 200 times, %d of them with the console; serve's log holds %d refusals",
		logsRead, consoleRead, strings.Count(daemonLog.String(), "could have planted"))
	if logsRead == 0 || consoleRead == 0 {
		t.Fatalf("logs answered %d times, with the console %d times; the test proves nothing", logsRead, consoleRead)
	}
	changed := 0
	for p, want := range modes {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			changed++
			t.Errorf("canary %s went from %#o to %#o", p, want, got)
		}
	}
	if changed > 0 {
		t.Errorf("%d of %d canaries outside serve's folders changed mode", changed, len(modes))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, 0o755); err != nil { // whatever the umask a serve left
		t.Fatal(err)
	}
}
