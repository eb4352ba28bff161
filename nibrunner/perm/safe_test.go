package perm

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
)

// guestUID is a uid of the jail's default range that no host account has:
// the owner of a guest's folder.
const guestUID = 900_042

// guestFolder makes a folder guestUID owns, 0700, in a folder root owns,
// as runtime_dir/<app>/vm/ is while a guest runs, and a root-only secret
// beside it. It returns both.
func guestFolder(t *testing.T) (vm, secret string) {
	t.Helper()
	testenv.RequireRoot(t)
	root := t.TempDir()
	vm = filepath.Join(root, "app", "vm")
	if err := os.MkdirAll(vm, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(vm, guestUID, guestUID); err != nil {
		t.Fatal(err)
	}
	secret = filepath.Join(root, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	return vm, secret
}

func asGuest(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, guestUID, guestUID); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesALinkAGuestPlantedAndSaysWhy(t *testing.T) {
	vm, secret := guestFolder(t)
	link := filepath.Join(vm, "console.log")
	os.Symlink(secret, link)
	asGuest(t, link)
	f, err := OpenRegular(link)
	if err == nil {
		b, _ := io.ReadAll(f)
		t.Fatalf("root opened the guest's link and read %q", b)
	}
	var ue *UnsafeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("err = %v, want an UnsafeError", err)
	}
	want := "refused to open " + link + ": is a symbolic link that uid 900042 could have planted, and root follows nothing a user other than root could have planted"
	if err.Error() != want {
		t.Fatalf("err = %q\nwant  %q", err, want)
	}
	// A relative link up and out of the guest's folder, too.
	os.Remove(link)
	os.Symlink("../../secret", link)
	asGuest(t, link)
	if _, err := OpenRegular(link); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("a relative link out of the guest's folder: %v", err)
	}
}

func TestOpenRefusesRootsFileInAGuestsFolderAsAnUnsafeTransition(t *testing.T) {
	vm, secret := guestFolder(t)
	// What a guest's uid could do where protected_hardlinks is off.
	hard := filepath.Join(vm, "console.log")
	if err := os.Link(secret, hard); err != nil {
		t.Fatal(err)
	}
	_, err := OpenRegular(hard)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "is owned by uid 0 in a folder uid 900042 owns (an unsafe path transition") {
		t.Fatalf("err = %v, want an unsafe transition", err)
	}
}

func TestOpenReadsTheGuestsOwnFileAndFollowsRootsOwnLinks(t *testing.T) {
	vm, secret := guestFolder(t)
	console := filepath.Join(vm, "console.log")
	os.WriteFile(console, []byte("booted"), 0o600)
	asGuest(t, console)
	f, err := OpenRegular(console)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "booted" {
		t.Fatalf("read %q", b)
	}
	// /var/run → /run: the host's own links, root's in root's folders.
	link := filepath.Join(filepath.Dir(secret), "link")
	os.Symlink(filepath.Dir(secret), link)
	f, err = OpenRegular(filepath.Join(link, "secret"))
	if err != nil {
		t.Fatalf("a link of root's in a folder of root's: %v", err)
	}
	f.Close()
}

func TestOpenOfAFIFOAGuestPlantedReturnsAtOnce(t *testing.T) {
	vm, _ := guestFolder(t)
	fifo := filepath.Join(vm, "console.log")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	asGuest(t, fifo)
	done := make(chan error, 1)
	go func() { _, err := OpenRegular(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "is a FIFO, not a regular file") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the open of a FIFO blocked")
	}
}

func TestTightenNeitherChangesNorEntersAFolderAGuestOwns(t *testing.T) {
	vm, secret := guestFolder(t)
	root := filepath.Dir(filepath.Dir(vm))
	os.Chmod(secret, 0o644)
	inside := filepath.Join(vm, "console.log")
	os.WriteFile(inside, nil, 0o666)
	os.Chmod(inside, 0o666)
	asGuest(t, inside)
	os.Chmod(vm, 0o777)

	done, err := Tighten(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, secret); got != 0o640 {
		t.Errorf("root's file is %#o, want 0640", got)
	}
	if got := mode(t, vm); got != 0o777 {
		t.Errorf("the guest's folder became %#o; it is the guest's", got)
	}
	if got := mode(t, inside); got != 0o666 {
		t.Errorf("a file in the guest's folder became %#o; root must not enter it", got)
	}
	for _, d := range done {
		if strings.HasPrefix(d.Path, vm) {
			t.Errorf("Tighten reported %s", d)
		}
	}
}

func TestTightenRefusesARootAnotherUserOwns(t *testing.T) {
	vm, _ := guestFolder(t)
	_, err := Tighten(vm)
	if err == nil || !strings.Contains(err.Error(), "it is owned by uid 900042, not root") {
		t.Fatalf("err = %v", err)
	}
}

func TestReclaimGivesTheGuestsFolderBackToRootWithoutFollowingItsLinks(t *testing.T) {
	vm, secret := guestFolder(t)
	// Another user's file, which a link in the folder names.
	other := filepath.Join(filepath.Dir(secret), "other")
	os.WriteFile(other, nil, 0o644)
	os.Chown(other, 1234, 1234)
	console := filepath.Join(vm, "console.log")
	os.WriteFile(console, []byte("x"), 0o644)
	os.Chmod(console, 0o4755)
	asGuest(t, console)
	link := filepath.Join(vm, "link")
	os.Symlink(other, link)
	asGuest(t, link)
	sub := filepath.Join(vm, "sub")
	os.Mkdir(sub, 0o777)
	asGuest(t, sub)
	lent := func(uid, gid uint32) bool { return uid == guestUID || gid == guestUID }

	if err := Reclaim(vm, lent); err != nil {
		t.Fatal(err)
	}
	// The guest's link is gone: given to root, it would sit root's in a
	// root folder, which is a link Open follows.
	if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the guest's link is still there after Reclaim: %v", err)
	}
	for _, p := range []string{vm, console, sub} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s is %d:%d after Reclaim, want root's", p, st.Uid, st.Gid)
		}
	}
	if st, _ := os.Lstat(console); st.Mode()&(os.ModePerm|os.ModeSetuid) != 0o750 {
		t.Errorf("the console is %v, want 0750 and no set-id bit", st.Mode())
	}
	var st syscall.Stat_t
	syscall.Stat(other, &st)
	if st.Uid != 1234 || st.Mode&0o777 != 0o644 {
		t.Errorf("the file the link names became %d, %#o", st.Uid, st.Mode&0o777)
	}
	if err := Reclaim(filepath.Join(vm, "missing"), lent); err != nil {
		t.Fatalf("Reclaim of a missing folder: %v", err)
	}
}
