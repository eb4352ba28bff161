package hostconfig

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"

	"alpnib.dev/internal/atomicfile"
)

//go:embed config.default.toml
var defaultConfig string

//go:embed nibrunnerd.service
var unitTemplate string

var (
	defaultTmpl = template.Must(template.New("config").Parse(defaultConfig))
	unitTmpl    = template.Must(template.New("unit").Parse(unitTemplate))
)

// Default renders the embedded default configuration with every path under
// root ("" or "/" for the real host): volumes as files on this disk,
// artifacts and exports in local folders, no proxy.
func Default(root string) []byte {
	var b bytes.Buffer
	if err := defaultTmpl.Execute(&b, struct{ Root string }{trimRoot(root)}); err != nil {
		panic(err) // the template is embedded and tested; it cannot fail
	}
	return b.Bytes()
}

func trimRoot(root string) string {
	root = filepath.Clean(root)
	if root == "/" || root == "." {
		return ""
	}
	return root
}

// Unit renders the systemd unit that runs binary with the configuration at
// configPath.
func Unit(binary, configPath string) []byte {
	var b bytes.Buffer
	if err := unitTmpl.Execute(&b, struct{ Binary, Config string }{binary, configPath}); err != nil {
		panic(err) // the template is embedded and tested; it cannot fail
	}
	return b.Bytes()
}

// Install is one run of `nibrunnerd install`: where it writes, and what it
// found and did.
type Install struct {
	// Root is the folder every path is under: "/" for the real host, a
	// temporary folder in tests.
	Root string
	// ConfigPath is the configuration file (under Root).
	ConfigPath string
	// Binary is the nibrunnerd the unit runs.
	Binary string

	// Config is the configuration in force, set by the config step.
	Config *Config
	// Done lists what the steps changed, Kept what was already in place,
	// and Left what a person still has to do.
	Done, Kept, Left []string
}

// UnitPath is where the systemd unit goes.
func (in *Install) UnitPath() string {
	return filepath.Join(in.Root, "etc/systemd/system/nibrunnerd.service")
}

// A Step is one named, idempotent part of install. It records what it did
// in in.Done, what it found already done in in.Kept, and what is left to a
// person in in.Left.
type Step struct {
	Name string
	Run  func(ctx context.Context, in *Install) error
}

// Steps are the steps of install this package owns, in order: the
// configuration, the folders it names, the systemd unit. The command
// appends the steps other packages own (host network, guest image) and
// ends with StartReminder.
func Steps() []Step {
	return []Step{
		{"configuration", writeConfig},
		{"folders", makeFolders},
		{"systemd unit", writeUnit},
	}
}

// StartReminder is install's last step: it leaves enabling and starting
// the unit to a person while it is not enabled, since install starts
// nothing.
var StartReminder = Step{"start", enableReminder}

// OnThisHost reports whether install works on the running host (Root is
// "/") rather than on a tree under a folder, so a step may change live
// kernel settings.
func (in *Install) OnThisHost() bool { return trimRoot(in.Root) == "" }

// Run runs steps in order, stopping at the first that fails.
func (in *Install) Run(ctx context.Context, steps []Step) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.Run(ctx, in); err != nil {
			return fmt.Errorf("install step %q: %w", s.Name, err)
		}
	}
	return nil
}

// writeConfig writes the default configuration when there is none, and
// never touches an existing one: it is the operator's. Either way the
// configuration must then load, since every later step reads it.
func writeConfig(_ context.Context, in *Install) error {
	_, err := os.Stat(in.ConfigPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(in.ConfigPath), 0o755); err != nil {
			return fmt.Errorf("making the configuration's folder: %w", err)
		}
		if err := atomicfile.WriteFile(in.ConfigPath, Default(in.Root), 0o644); err != nil {
			return fmt.Errorf("writing the default configuration: %w", err)
		}
		in.Done = append(in.Done, "wrote the default configuration to "+in.ConfigPath)
		in.Left = append(in.Left, "review "+in.ConfigPath+": add [proxy.http] (and [proxy.raw]) to route hostnames and ports, point store_url at S3 if artifacts live there")
	case err != nil:
		return fmt.Errorf("looking for an existing configuration: %w", err)
	default:
		in.Kept = append(in.Kept, "the existing configuration "+in.ConfigPath+" (never overwritten)")
	}
	c, err := Load(in.ConfigPath)
	if err != nil {
		return err
	}
	in.Config = c
	return nil
}

// Folders are the folders the configuration c names that must exist
// before the daemon starts.
func Folders(c *Config) []string {
	dirs := []string{
		c.Paths.StateDir,
		c.Paths.RuntimeDir,
		c.Paths.SnapshotDir,
		c.Paths.GuestImageDir,
		c.Volumes.StoragePrefix,
		c.Exports.StagingDir,
	}
	if !IsS3(c.Paths.DesiredStateFile) {
		dirs = append(dirs, filepath.Dir(c.Paths.DesiredStateFile))
	}
	if c.Artifacts.Store.Kind == StoreDir {
		dirs = append(dirs, c.Artifacts.Store.Dir)
	}
	if c.Exports.Store.Kind == StoreDir {
		dirs = append(dirs, c.Exports.Store.Dir)
	}
	return dirs
}

// makeFolders lays out the folders. They are the daemon's (it runs as
// root) and hold tenants' data, so nobody else may read them.
func makeFolders(_ context.Context, in *Install) error {
	made := 0
	for _, d := range Folders(in.Config) {
		if fi, err := os.Stat(d); err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is in the way: it is a file, and the configuration names it as a folder", d)
			}
			continue
		}
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("making %s: %w", d, err)
		}
		in.Done = append(in.Done, "made "+d)
		made++
	}
	if made == 0 {
		in.Kept = append(in.Kept, "the folders were all in place")
	}
	return nil
}

// writeUnit renders the systemd unit and writes it when it differs.
func writeUnit(_ context.Context, in *Install) error {
	want := Unit(in.Binary, in.ConfigPath)
	path := in.UnitPath()
	got, err := os.ReadFile(path)
	if err == nil && bytes.Equal(got, want) {
		in.Kept = append(in.Kept, "the systemd unit "+path+" was current")
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("making the unit's folder: %w", err)
	}
	if err := atomicfile.WriteFile(path, want, 0o644); err != nil {
		return fmt.Errorf("writing the systemd unit: %w", err)
	}
	if err == nil {
		in.Done = append(in.Done, "updated the systemd unit "+path)
		if in.unitEnabled() {
			in.Left = append(in.Left, "systemctl daemon-reload && systemctl restart nibrunnerd (guests keep running)")
		}
	} else {
		in.Done = append(in.Done, "wrote the systemd unit "+path)
	}
	return nil
}

// unitEnabled reports whether the unit is enabled: systemctl enable links
// it into multi-user.target.wants.
func (in *Install) unitEnabled() bool {
	_, err := os.Lstat(filepath.Join(in.Root, "etc/systemd/system/multi-user.target.wants/nibrunnerd.service"))
	return err == nil
}

// enableReminder leaves enabling the unit to a person while it is not
// enabled: install does not start services.
func enableReminder(_ context.Context, in *Install) error {
	if !in.unitEnabled() {
		in.Left = append(in.Left, "systemctl daemon-reload && systemctl enable --now nibrunnerd")
	}
	return nil
}
