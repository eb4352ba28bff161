package hostconfig

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func install(t *testing.T, root, binary string) *Install {
	t.Helper()
	in := &Install{Root: root, Binary: binary, ConfigPath: filepath.Join(root, DefaultPath)}
	if err := in.Run(context.Background(), append(Steps(), StartReminder)); err != nil {
		t.Fatalf("install: %v", err)
	}
	return in
}

func TestInstallOnAnEmptyHostWritesTheConfigTheFoldersAndTheUnit(t *testing.T) {
	root := t.TempDir()
	in := install(t, root, "/usr/local/bin/nibrunnerd")
	c, err := Load(filepath.Join(root, "etc/nibrunner/config.toml"))
	if err != nil {
		t.Fatalf("the written configuration does not load: %v", err)
	}
	for _, d := range Folders(c) {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("folder %s: %v", d, err)
		}
	}
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/nibrunnerd.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/usr/local/bin/nibrunnerd serve")) ||
		!bytes.Contains(unit, []byte("NIBRUNNER_CONFIG="+filepath.Join(root, "etc/nibrunner/config.toml"))) {
		t.Errorf("unit does not run the binary with the configuration:\n%s", unit)
	}
	if len(in.Done) == 0 || len(in.Left) == 0 {
		t.Errorf("done %q, left %q", in.Done, in.Left)
	}
}

func TestASecondInstallChangesNothingAndSaysSo(t *testing.T) {
	root := t.TempDir()
	install(t, root, "/usr/local/bin/nibrunnerd")
	before := snapshot(t, root)
	in := install(t, root, "/usr/local/bin/nibrunnerd")
	if len(in.Done) != 0 {
		t.Fatalf("the second run did %q", in.Done)
	}
	if len(in.Kept) == 0 {
		t.Fatal("the second run says nothing of what it kept")
	}
	if after := snapshot(t, root); after != before {
		t.Fatalf("the second run changed the tree:\n%s\n---\n%s", before, after)
	}
}

// snapshot renders every path, mode and file content under root.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestInstallNeverOverwritesAnExistingConfigurationAndLaysOutItsFolders(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/nibrunner/config.toml")
	mine := bytes.ReplaceAll(Default(root), []byte("/var/lib/nibrunner/volumes"), []byte("/big-disk/volumes"))
	mine = append(mine, []byte("\n[metrics]\nlisten_address = \"127.0.0.1\"\nport = 9464\n")...)
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, mine, 0o600); err != nil {
		t.Fatal(err)
	}
	in := install(t, root, "/usr/local/bin/nibrunnerd")
	got, _ := os.ReadFile(cfg)
	if !bytes.Equal(got, mine) {
		t.Fatal("install rewrote an existing configuration")
	}
	if fi, err := os.Stat(filepath.Join(root, "big-disk/volumes")); err != nil || !fi.IsDir() {
		t.Fatalf("the existing configuration's volume folder was not made: %v", err)
	}
	if in.Config.Metrics == nil {
		t.Fatal("install did not use the existing configuration")
	}
}

func TestInstallStopsAtAnExistingConfigurationThatIsRefused(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/nibrunner/config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("max_apps = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := &Install{Root: root, Binary: "/bin/nibrunnerd", ConfigPath: cfg}
	err := in.Run(context.Background(), Steps())
	if err == nil || !strings.Contains(err.Error(), "missing section [paths]") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(in.UnitPath()); err == nil {
		t.Fatal("a unit was written for a configuration that does not load")
	}
}

func TestAChangedBinaryUpdatesTheUnitOnly(t *testing.T) {
	root := t.TempDir()
	install(t, root, "/usr/local/bin/nibrunnerd")
	in := install(t, root, "/opt/nib/nibrunnerd")
	if len(in.Done) != 1 || !strings.HasPrefix(in.Done[0], "updated the systemd unit") {
		t.Fatalf("done %q", in.Done)
	}
}

func TestAFileWhereAFolderBelongsStopsInstallNamingIt(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "var/lib/nibrunner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/nibrunner/volumes"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in := &Install{Root: root, Binary: "/bin/nibrunnerd", ConfigPath: filepath.Join(root, DefaultPath)}
	err := in.Run(context.Background(), Steps())
	if err == nil || !strings.Contains(err.Error(), "var/lib/nibrunner/volumes is in the way") {
		t.Fatalf("got %v", err)
	}
}

func TestAnEnabledUnitIsNotLeftToEnable(t *testing.T) {
	root := t.TempDir()
	first := install(t, root, "/bin/nibrunnerd")
	if !strings.Contains(strings.Join(first.Left, "\n"), "systemctl daemon-reload && systemctl enable --now nibrunnerd") {
		t.Fatalf("enabling the unit is not left to do: %q", first.Left)
	}
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../nibrunnerd.service", filepath.Join(wants, "nibrunnerd.service")); err != nil {
		t.Fatal(err)
	}
	in := install(t, root, "/bin/nibrunnerd")
	for _, l := range in.Left {
		if strings.Contains(l, "enable") {
			t.Fatalf("still left: %q", l)
		}
	}
}

func TestTheUnitKeepsGuestsAliveAndTheDaemonProtected(t *testing.T) {
	got := Unit("/usr/local/bin/nibrunnerd", "/etc/nibrunner/config.toml")
	for _, line := range []string{"KillMode=process", "Restart=always", "LimitNOFILE=1048576", "OOMScoreAdjust=-900", "WantedBy=multi-user.target"} {
		if !bytes.Contains(got, []byte("\n"+line+"\n")) {
			t.Errorf("the unit lacks %s", line)
		}
	}
	golden := "testdata/nibrunnerd.service.golden"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("unit differs from %s:\n%s", golden, got)
	}
}
