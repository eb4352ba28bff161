package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// LauncherArg is the hidden first argument that asks a binary calling
// IsLauncher and RunLauncher from its main (nibrunnerd; a test binary's
// TestMain) to be the launcher of one jailed program instead of itself.
const LauncherArg = "__nibrunner-jail"

// Plan is everything the launcher needs, handed over as JSON on its
// command line (nothing in it is secret: the tenant's environment is on
// the config drive, which only the guest's gid reads).
type Plan struct {
	// Root is an empty folder of the host that the launcher mounts the
	// jail's root over, in its own mount namespace (the host's view of it
	// stays empty).
	Root  string `json:"root"`
	Binds []Bind `json:"binds"`
	// CgroupProcs are the cgroup.procs files the launcher joins before
	// anything else (one per v1 hierarchy, one under v2).
	CgroupProcs []string `json:"cgroupProcs"`
	Identity    Identity `json:"identity"`
	// Groups are the supplementary groups (the shared one; kvm's).
	Groups []int `json:"groups"`
	// Program and Args are the VMM's command line, Args without argv[0];
	// Env its whole environment (none of the daemon's).
	Program string   `json:"program"`
	Args    []string `json:"args"`
	Env     []string `json:"env,omitempty"`
	// Handed is how many files the caller hands over from fd 3 on
	// (exec.Cmd's ExtraFiles); every descriptor above them is closed at
	// the exec, whatever the daemon inherited.
	Handed int `json:"handed"`
	// Rlimits are the program's RLIMIT_NOFILE and RLIMIT_FSIZE, soft and
	// hard alike; both must be finite.
	Rlimits Rlimits `json:"rlimits"`
	// OOMScoreAdj is written to the program's oom_score_adj (OOMScoreAdj
	// gives the VMM's).
	OOMScoreAdj int `json:"oomScoreAdj"`
}

// Namespaces are the namespaces every jailed VMM runs in; a VMM handed its
// tap also gets an empty network namespace (NetNS).
const Namespaces = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// NetNS is the namespace a VMM that needs no host network (its tap is an
// open file) runs in: nothing but a loopback that is down.
const NetNS = unix.CLONE_NEWNET

// Command returns the command that runs p jailed: this binary again, with
// LauncherArg, in new namespaces and a session of its own (the guest
// outlives the daemon). newNet adds the empty network namespace. The
// caller sets its output and the files it hands over (ExtraFiles: fd 3
// on).
func Command(p Plan, newNet bool) (*exec.Cmd, error) {
	if p.Identity.UID <= 0 || p.Identity.GID <= 0 {
		return nil, fmt.Errorf("jail: refusing to run a VMM as uid %d gid %d", p.Identity.UID, p.Identity.GID)
	}
	if err := p.Rlimits.check(); err != nil {
		return nil, err
	}
	if p.OOMScoreAdj < -1000 || p.OOMScoreAdj > 1000 {
		return nil, fmt.Errorf("jail: oom_score_adj %d is outside -1000…1000", p.OOMScoreAdj)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("jail: find this binary to launch the jail: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("jail: encode the plan: %w", err)
	}
	cmd := exec.Command(self, LauncherArg, string(b))
	flags := uintptr(Namespaces)
	if newNet {
		flags |= NetNS
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: flags}
	// The VMM inherits nothing of the daemon's environment (S3
	// credentials among it).
	cmd.Env = []string{}
	return cmd, nil
}

// IsLauncher reports whether args (os.Args) ask this process to be a
// launcher: its main then calls RunLauncher before anything else.
func IsLauncher(args []string) bool {
	return len(args) >= 3 && args[1] == LauncherArg
}

// RunLauncher is the launcher's entry point, called from a main (or a
// TestMain) with os.Args when IsLauncher says so: it builds the jail the
// plan in args[2] describes and execs its program, so it returns only
// the exit code of a failure, which it has told on stderr.
func RunLauncher(args []string) int {
	if !IsLauncher(args) {
		fmt.Fprintf(os.Stderr, "jail: the launcher runs as %s %s PLAN\n", args[0], LauncherArg)
		return 127
	}
	// Capability bounding sets, no_new_privs and seccomp filters are per
	// thread: everything below runs on the thread that execs.
	runtime.LockOSThread()
	var p Plan
	if err := json.Unmarshal([]byte(args[2]), &p); err != nil {
		fmt.Fprintf(os.Stderr, "jail: decode the plan: %v\n", err)
		return 127
	}
	err := launch(p)
	fmt.Fprintf(os.Stderr, "jail: %v\n", err)
	return 127
}

// launch builds the jail p describes and execs its VMM; it returns only on
// failure.
func launch(p Plan) error {
	// The root's folders are made 0755 whatever the daemon's umask (its
	// 027 would shut the guest's uid out of the paths to its own files);
	// what QEMU then makes is its uid's alone.
	unix.Umask(0)
	if err := p.Rlimits.check(); err != nil {
		return err
	}
	filter, err := Filter()
	if err != nil {
		return err
	}
	// Read while the host's /proc is still there.
	last, err := lastCap()
	if err != nil {
		return err
	}
	// Nothing the daemon inherited reaches the program: every descriptor
	// past the handed ones is closed at the exec (close-on-exec now, so
	// the Go runtime's own keep working until then).
	if err := unix.CloseRange(uint(3+p.Handed), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("mark the inherited descriptors close-on-exec: %w", err)
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(p.OOMScoreAdj)), 0); err != nil {
		return fmt.Errorf("set oom_score_adj %d: %w", p.OOMScoreAdj, err)
	}
	if err := p.Rlimits.set(); err != nil {
		return err
	}
	for _, f := range p.CgroupProcs {
		// "0" is the writing process, in any PID namespace.
		if err := os.WriteFile(f, []byte("0"), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", filepath.Dir(f), err)
		}
	}
	if err := buildRoot(p); err != nil {
		return err
	}
	if err := dropPrivileges(p, last); err != nil {
		return err
	}
	unix.Umask(0o077)
	argv := append([]string{p.Program}, p.Args...)
	env := p.Env
	if env == nil {
		env = []string{}
	}
	// The filter goes last: from here on this thread makes only the exec.
	if err := installFilter(filter); err != nil {
		return err
	}
	return fmt.Errorf("exec %s: %w", p.Program, unix.Exec(p.Program, argv, env))
}

// buildRoot mounts a tmpfs over p.Root, binds p's paths into it at their
// own paths, pivots into it and lets the host's root go.
func buildRoot(p Plan) error {
	// Nothing mounted here reaches the host, nor the reverse.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", p.Root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mount the root's tmpfs on %s: %w", p.Root, err)
	}
	for _, s := range SystemPaths {
		if err := systemPath(p.Root, s); err != nil {
			return err
		}
	}
	for _, b := range p.Binds {
		if err := bind(p.Root, b); err != nil {
			return err
		}
	}
	old := filepath.Join(p.Root, ".old")
	if err := os.Mkdir(old, 0o700); err != nil {
		return fmt.Errorf("make the old root's mount point: %w", err)
	}
	if err := unix.PivotRoot(p.Root, old); err != nil {
		return fmt.Errorf("pivot_root into %s: %w", p.Root, err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("let the host's root go: %w", err)
	}
	if err := os.Remove("/.old"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("make the root read-only: %w", err)
	}
	return nil
}

// systemPath makes the host's s visible in the root: a symbolic link is
// copied as one, a folder bound read-only, a missing one left out.
func systemPath(root, s string) error {
	st, err := os.Lstat(s)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.Mode()&os.ModeSymlink != 0:
		to, err := os.Readlink(s)
		if err != nil {
			return err
		}
		return os.Symlink(to, filepath.Join(root, s))
	}
	return bind(root, Bind{Path: s, ReadOnly: true})
}

// bind binds b.Path of the host at the same path under root.
func bind(root string, b Bind) error {
	st, err := os.Stat(b.Path)
	if err != nil {
		return fmt.Errorf("bind %s into the jail: %w", b.Path, err)
	}
	target := filepath.Join(root, b.Path)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if st.IsDir() {
		err = os.Mkdir(target, 0o755)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make %s's mount point: %w", b.Path, err)
	}
	if err := unix.Mount(b.Path, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s into the jail: %w", b.Path, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NOSUID)
	if !b.Dev {
		flags |= unix.MS_NODEV
	}
	if b.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s in the jail: %w", b.Path, err)
	}
	return nil
}

// dropPrivileges becomes p's uid and gid with no capability in any set
// and no_new_privs set, on the thread that will exec.
func dropPrivileges(p Plan, last int) error {
	// The bounding set needs CAP_SETPCAP to shrink: before the uid goes.
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := syscall.Setgroups(p.Groups); err != nil {
		return fmt.Errorf("set supplementary groups %v: %w", p.Groups, err)
	}
	id := p.Identity
	if err := syscall.Setresgid(id.GID, id.GID, id.GID); err != nil {
		return fmt.Errorf("become gid %d: %w", id.GID, err)
	}
	// With every uid non-zero the kernel empties the permitted, effective
	// and ambient sets; the inheritable set is cleared below.
	if err := syscall.Setresuid(id.UID, id.UID, id.UID); err != nil {
		return fmt.Errorf("become uid %d: %w", id.UID, err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear the capability sets: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// lastCap is the highest capability this kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read the last capability: %w", err)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
