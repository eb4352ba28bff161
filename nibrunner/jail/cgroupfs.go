package jail

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroups is the parent cgroup of every guest, under a mounted hierarchy:
// Mount/Parent under v2, Mount/<controller>/Parent under v1.
type Cgroups struct {
	Version Version
	// Mount is where the hierarchies are mounted (/sys/fs/cgroup).
	Mount string
	// Parent is the parent's path below the hierarchy's root.
	Parent string
	// memsw says v1's memory controller accounts swap.
	memsw bool
}

// DefaultMount is where cgroups are mounted.
const DefaultMount = "/sys/fs/cgroup"

// Detect finds which version mount holds: cgroup2 itself, or a tmpfs of v1
// hierarchies (a cgroup2 mounted at unified/ beside them, the "hybrid"
// layout, holds no controller and does not count).
func Detect(mount, parent string) (Cgroups, error) {
	if parent == "" || filepath.IsAbs(parent) || filepath.Clean(parent) != parent || strings.HasPrefix(parent, "..") {
		return Cgroups{}, fmt.Errorf("jail: the guests' cgroup %q is not a clean relative path", parent)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil {
		return Cgroups{}, fmt.Errorf("jail: look at the cgroups at %s: %w", mount, err)
	}
	c := Cgroups{Mount: mount, Parent: parent}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		c.Version = V2
		return c, nil
	}
	c.Version = V1
	for _, ctl := range V1Controllers {
		if err := unix.Statfs(filepath.Join(mount, ctl), &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			return Cgroups{}, fmt.Errorf("jail: no cgroup v1 %s hierarchy at %s (nor a cgroup2 mount): guests cannot be limited", ctl, filepath.Join(mount, ctl))
		}
	}
	_, err := os.Stat(filepath.Join(mount, "memory", "memory.memsw.limit_in_bytes"))
	c.memsw = err == nil
	return c, nil
}

func (c Cgroups) dir(controller, name string) string {
	if c.Version == V2 {
		return filepath.Join(c.Mount, c.Parent, name)
	}
	return filepath.Join(c.Mount, controller, c.Parent, name)
}

func (c Cgroups) write(name string, ws []Write) error {
	for _, w := range ws {
		p := filepath.Join(c.dir(w.Controller, name), w.File)
		if err := os.WriteFile(p, []byte(w.Value), 0); err != nil {
			return fmt.Errorf("jail: write %q to %s: %w", w.Value, p, err)
		}
	}
	return nil
}

func (c Cgroups) controllers() []string {
	if c.Version == V2 {
		return []string{""}
	}
	return V1Controllers
}

// Setup makes the parent and gives it weight. Under v2 every level from
// the hierarchy's root down enables the controllers for the next.
func (c Cgroups) Setup(weight int) error {
	for _, ctl := range c.controllers() {
		if err := os.MkdirAll(c.dir(ctl, ""), 0o755); err != nil {
			return fmt.Errorf("jail: make the guests' cgroup: %w", err)
		}
	}
	if c.Version == V2 {
		parts := strings.Split(c.Parent, "/")
		for i := range parts {
			p := filepath.Join(append([]string{c.Mount}, parts[:i]...)...)
			if err := enable(p); err != nil {
				return err
			}
		}
	}
	return c.write("", ParentWrites(c.Version, weight))
}

// enable turns the guests' controllers on for dir's children, unless they
// already are.
func enable(dir string) error {
	f := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(f)
	if err != nil {
		return fmt.Errorf("jail: read %s: %w", f, err)
	}
	have := strings.Fields(string(b))
	var want []string
	for _, ctl := range strings.Fields(V2Controllers) {
		if !slices.Contains(have, ctl[1:]) {
			want = append(want, ctl)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := os.WriteFile(f, []byte(strings.Join(want, " ")), 0); err != nil {
		return fmt.Errorf("jail: enable %s in %s (a cgroup with processes of its own cannot; under systemd, give the unit Delegate=yes): %w", strings.Join(want, " "), dir, err)
	}
	return nil
}

// Create makes name's cgroup, new, with limits l and returns the
// cgroup.procs files a process writes to join it. One an earlier guest
// left is removed first, so its counts (an OOM kill) are not the new
// guest's; one that still holds a process is an error naming it.
func (c Cgroups) Create(name string, l Limits) ([]string, error) {
	if err := c.Remove(name); err != nil {
		return nil, fmt.Errorf("%w (processes %v of an earlier guest still run in it)", err, c.Procs(name))
	}
	var procs []string
	for _, ctl := range c.controllers() {
		d := c.dir(ctl, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("jail: make cgroup %s: %w", d, err)
		}
		procs = append(procs, filepath.Join(d, "cgroup.procs"))
	}
	// From "max", each limit is lowered (v1 wants memsw set after).
	if err := c.write(name, GuestWrites(c.Version, l, c.memsw, false)); err != nil {
		return nil, err
	}
	return procs, nil
}

// higherThan says l's memory limit is above name's present one.
func (c Cgroups) higherThan(name string, l Limits) bool {
	f := "memory.max"
	if c.Version == V1 {
		f = "memory.limit_in_bytes"
	}
	b, err := os.ReadFile(filepath.Join(c.dir("memory", name), f))
	if err != nil {
		return false
	}
	var now int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &now); err != nil {
		return false // "max": the highest
	}
	return l.MemoryMax > now
}

// SetMemory changes name's memory limit to l's.
func (c Cgroups) SetMemory(name string, l Limits) error {
	return c.write(name, MemoryWrites(c.Version, l, c.memsw, c.higherThan(name, l)))
}

// OOMKilled counts the processes the kernel killed in name's cgroup at its
// memory limit.
func (c Cgroups) OOMKilled(name string) int {
	e := EventsFile(c.Version)
	b, err := os.ReadFile(filepath.Join(c.dir(e.Controller, name), e.File))
	if err != nil {
		return 0
	}
	return OOMKills(string(b))
}

// Procs lists the processes in name's cgroup.
func (c Cgroups) Procs(name string) []string {
	var out []string
	for _, ctl := range c.controllers() {
		b, _ := os.ReadFile(filepath.Join(c.dir(ctl, name), "cgroup.procs"))
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// Remove deletes name's cgroup; one that is missing is fine, one that
// still holds a process is an error.
func (c Cgroups) Remove(name string) error {
	var errs []error
	for _, ctl := range c.controllers() {
		if err := unix.Rmdir(c.dir(ctl, name)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("jail: remove cgroup %s: %w", c.dir(ctl, name), err))
		}
	}
	return errors.Join(errs...)
}

// RemoveReaped is Remove for the cgroup of a process just reaped: the
// kernel takes a moment to let go of it, so a cgroup that still holds one
// is tried again, every 20 ms for about a second.
func (c Cgroups) RemoveReaped(name string) error {
	for i := 0; ; i++ {
		err := c.Remove(name)
		if err == nil || i == 50 {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemoveParent removes the guests' parent cgroup once no guest's cgroup is
// left in it: a parent that still holds one (a guest outlives its daemon)
// stays, and that is not an error.
func (c Cgroups) RemoveParent() error {
	var errs []error
	for _, ctl := range c.controllers() {
		err := unix.Rmdir(c.dir(ctl, ""))
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EBUSY) {
			errs = append(errs, fmt.Errorf("jail: remove the guests' cgroup %s: %w", c.dir(ctl, ""), err))
		}
	}
	return errors.Join(errs...)
}

// ParentFor is the guests' parent cgroup of a VMM whose runtime folder is
// runtimeDir (absolute) when the host configuration names none:
// nibrunner- and 8 hex digits of the folder's SHA-256, so that two VMMs on
// one host (tests) keep apart.
func ParentFor(runtimeDir string) string {
	h := sha256.Sum256([]byte(runtimeDir))
	return "nibrunner-" + hex.EncodeToString(h[:4])
}

// Names lists the guests' cgroups under the parent.
func (c Cgroups) Names() []string {
	ents, _ := os.ReadDir(c.dir("memory", ""))
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Dir is name's cgroup folder for controller ("" under v2).
func (c Cgroups) Dir(controller, name string) string { return c.dir(controller, name) }
