package perm

import (
	"os"
	"path/filepath"
	"testing"

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
