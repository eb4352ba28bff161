package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/perm"
)

// TestAQMPSocketAGuestReplacedWithALinkIsNotDialled: the guest's uid owns
// vm/, where QEMU's sockets are; a link it put in place of qmp.sock to a
// socket of root's (the daemon's own control socket, say) is refused at
// once, and root's socket never sees a connection. QEMU's own socket,
// the guest uid's, is dialled.
func TestAQMPSocketAGuestReplacedWithALinkIsNotDialled(t *testing.T) {
	testenv.RequireRoot(t)
	const guest = 900_044
	dir := shortTempDir(t)
	vm := filepath.Join(dir, "vm")
	os.Mkdir(vm, 0o700)
	os.Chown(vm, guest, guest)
	roots := filepath.Join(dir, "root.sock")
	l, err := net.Listen("unix", roots)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	planted := filepath.Join(vm, qmpSocket)
	os.Symlink(roots, planted)
	os.Lchown(planted, guest, guest)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = dialQMP(ctx, planted)
	if !errors.Is(err, perm.ErrUnsafe) || !strings.Contains(err.Error(), "is a symbolic link that uid 900044 could have planted") {
		t.Fatalf("dialQMP through the planted link: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the refusal waited for the deadline instead of being given at once")
	}
	// The control channel dials the same way.
	ctlPath := filepath.Join(vm, controlSocket)
	os.Symlink(roots, ctlPath)
	os.Lchown(ctlPath, guest, guest)
	if _, err := dialSocket(ctx, ctlPath); !errors.Is(err, perm.ErrUnsafe) {
		t.Fatalf("the control socket through the planted link: %v", err)
	}
	select {
	case <-accepted:
		t.Fatal("root's socket was connected to through the guest's link")
	default:
	}

	// QEMU's own socket, made by the guest's uid, is dialled.
	real := fakeQMP(t, func(string, json.RawMessage) (any, string) { return nil, "" })
	os.Remove(planted)
	if err := os.Rename(real, planted); err != nil {
		t.Fatal(err)
	}
	os.Lchown(planted, guest, guest)
	q, err := dialQMP(ctx, planted)
	if err != nil {
		t.Fatalf("QEMU's own socket: %v", err)
	}
	q.close()
}

// TestAGoneGuestsFilesAreRootsAgainAndTheSlotsNextTenantReadsNone: once a
// guest's QEMU has ended, its config drive (its environment and secrets),
// its volume and vm/ are root's, so the next tenant of the slot, which
// runs as the same uid and gid, reads none of them; a link its uid left in
// vm/ is given back itself, and what it names is not touched.
func TestAGoneGuestsFilesAreRootsAgainAndTheSlotsNextTenantReadsNone(t *testing.T) {
	testenv.RequireRoot(t)
	setpriv := testenv.RequireCommand(t, "setpriv")
	dir := shortTempDir(t)
	v := &VMM{cfg: Config{RuntimeDir: filepath.Join(dir, "run")}, cgroups: jail.Cgroups{Mount: dir},
		ids: jail.Range{UIDBase: 900_200, GIDBase: 900_200, Count: 10}}
	id, _ := v.ids.For(3)
	os.MkdirAll(v.vmDir("a"), 0o750)
	// Folders open to all, so that only the files' own modes keep the
	// tenant out.
	for _, d := range []string{dir, v.cfg.RuntimeDir, v.appDir("a")} {
		os.Chmod(d, 0o755)
	}
	config := filepath.Join(v.appDir("a"), configDrive)
	os.WriteFile(config, []byte("SECRET_TOKEN=hunter2"), 0o600)
	volume := filepath.Join(dir, "a.img")
	os.WriteFile(volume, []byte("ext4"), 0o600)
	other := filepath.Join(dir, "other")
	os.WriteFile(other, nil, 0o644)
	os.Chown(other, 1234, 1234)
	// As prepareJail lends them.
	for _, g := range []struct {
		path     string
		uid, gid int
		bits     os.FileMode
	}{{config, 0, id.GID, 0o040}, {volume, id.UID, id.GID, 0o600}, {v.vmDir("a"), id.UID, id.GID, 0o700}} {
		if err := grant(g.path, g.uid, g.gid, g.bits); err != nil {
			t.Fatal(err)
		}
	}
	// As the guest's QEMU leaves vm/.
	console := filepath.Join(v.vmDir("a"), consoleFile)
	os.WriteFile(console, []byte("boot"), 0o640)
	link := filepath.Join(v.vmDir("a"), "link")
	os.Symlink(other, link)
	for _, p := range []string{console, link} {
		os.Lchown(p, id.UID, id.GID)
	}

	v.unjail("a", record{Volume: volume}, 0)

	// The guest's link is gone, not root's: a root link in a root folder
	// is one perm.Open follows.
	if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the guest's link is still there once the guest is gone: %v", err)
	}
	for _, p := range []string{config, volume, v.vmDir("a"), console} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s is %d:%d once the guest is gone, want root's", p, st.Uid, st.Gid)
		}
	}
	var st syscall.Stat_t
	syscall.Stat(other, &st)
	if st.Uid != 1234 {
		t.Errorf("the file the guest's link names became uid %d's", st.Uid)
	}
	for _, p := range []string{config, volume, console} {
		out, err := exec.Command(setpriv, "--reuid", strconv.Itoa(id.UID), "--regid", strconv.Itoa(id.GID), "--clear-groups", "cat", p).CombinedOutput()
		if err == nil {
			t.Errorf("the slot's next tenant read %s: %q", p, out)
		}
	}
}
