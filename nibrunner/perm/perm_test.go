package perm

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"alpnib.dev/internal/testenv"
	"golang.org/x/sys/unix"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestTightenTakesOthersPermissionsOffEverythingUnderTheFolderAndSaysWhat(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(filepath.Join(root, "layers"), 0o755)
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Join(root, "layers"), 0o775)
	os.WriteFile(filepath.Join(root, "state.db"), nil, 0o644)
	os.Chmod(filepath.Join(root, "state.db"), 0o644)
	os.WriteFile(filepath.Join(root, "layers", "private"), nil, 0o600)
	os.Symlink("/etc/passwd", filepath.Join(root, "link"))

	done, err := Tighten(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]os.FileMode{
		root:                                  {0o755, 0o750},
		filepath.Join(root, "layers"):         {0o775, 0o750},
		filepath.Join(root, "state.db"):       {0o644, 0o640},
		filepath.Join(root, "layers/private"): {0o600, 0o600},
	}
	for p, w := range want {
		if got := mode(t, p); got != w[1] {
			t.Errorf("%s is %#o after Tighten, want %#o", p, got, w[1])
		}
	}
	if len(done) != 3 {
		t.Fatalf("Tighten reported %v; want the 3 paths it changed", done)
	}
	for _, d := range done {
		if w := want[d.Path]; d.Was != w[0] || d.Now != w[1] {
			t.Errorf("reported %s, want %#o → %#o", d, w[0], w[1])
		}
	}
	if st, _ := os.Stat("/etc/passwd"); st.Mode().Perm()&0o004 == 0 {
		t.Fatal("Tighten followed a symlink out of the folder")
	}
	if again, err := Tighten(root); err != nil || len(again) != 0 {
		t.Fatalf("a second Tighten changed %v, %v; want nothing", again, err)
	}
	if done, err := Tighten(filepath.Join(root, "missing")); err != nil || len(done) != 0 {
		t.Fatalf("Tighten of a missing folder: %v, %v", done, err)
	}
}

func TestMkdirExactSetsEveryFolderDownToTheTargetWhateverTheUmask(t *testing.T) {
	old := unix.Umask(Umask)
	defer unix.Umask(old)
	root := t.TempDir()
	os.Chmod(root, 0o700)
	dir := filepath.Join(root, "srv", "app")
	if err := MkdirExact(root, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, filepath.Join(root, "srv"), dir} {
		if got := mode(t, p); got != 0o755 {
			t.Errorf("%s is %#o, want 0755", p, got)
		}
	}
	if err := MkdirExact(dir, root, 0o755); err == nil {
		t.Fatal("MkdirExact made a folder above its root")
	}
}

// BenchmarkTighten10000Files is what serve's start costs on a host whose
// folder holds 10,000 files others could read (the first start after an
// upgrade), and on one already tight (every later start).
func BenchmarkTighten10000Files(b *testing.B) {
	root := b.TempDir()
	for i := 0; i < 100; i++ {
		d := filepath.Join(root, strconv.Itoa(i))
		os.Mkdir(d, 0o755)
		for j := 0; j < 100; j++ {
			os.WriteFile(filepath.Join(d, strconv.Itoa(j)), nil, 0o644)
		}
	}
	b.Run("open", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			filepath.WalkDir(root, func(p string, _ os.DirEntry, _ error) error { return os.Chmod(p, 0o755) })
			b.StartTimer()
			if done, err := Tighten(root); err != nil || len(done) != 10101 {
				b.Fatalf("%d, %v", len(done), err)
			}
		}
	})
	b.Run("tight", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if done, err := Tighten(root); err != nil || len(done) != 0 {
				b.Fatalf("%d, %v", len(done), err)
			}
		}
	})
}

func TestTightenLeavesAFilesystemMountedBelowTheFolderAlone(t *testing.T) {
	testenv.RequireRoot(t)
	root := t.TempDir()
	mnt := filepath.Join(root, "checkpoints", "mnt")
	os.MkdirAll(mnt, 0o755)
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "mode=0755"); err != nil {
		testenv.Missing(t, "cannot mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	tenant := filepath.Join(mnt, "index.html")
	os.WriteFile(tenant, []byte("public"), 0o644)
	os.Chmod(tenant, 0o644)

	if _, err := Tighten(root); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, filepath.Join(root, "checkpoints")); got != 0o750 {
		t.Errorf("the folder above the mount is %#o, want 0750", got)
	}
	if got := mode(t, tenant); got != 0o644 {
		t.Errorf("a tenant's file on the mounted volume became %#o; its modes are the tenant's", got)
	}
	if got := mode(t, mnt); got != 0o755 {
		t.Errorf("the mounted volume's root became %#o", got)
	}
}
