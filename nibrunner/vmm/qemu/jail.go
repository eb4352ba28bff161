package qemu

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
)

// Jail is how guests are jailed (nibrunner/jail). The zero value is the
// default range and a cgroup parent named for the runtime folder; there
// is no setting that runs a guest unjailed.
type Jail struct {
	// UIDBase and GIDBase start the guests' ids ([jail] uid_base and
	// gid_base); Count is how many slots they cover (max_apps).
	UIDBase, GIDBase, Count int
	// CgroupMount is where cgroups are mounted (/sys/fs/cgroup).
	CgroupMount string
	// CgroupParent is the guests' parent cgroup below the hierarchy's
	// root; empty is nibrunner-<hash of the runtime folder>, so two VMMs
	// on one host (tests) keep apart.
	CgroupParent string
	// CPUWeight is the parent's cpu.weight ([jail] guests_cpu_weight).
	CPUWeight int
}

// sandboxArg is QEMU's own seccomp filter: no obsolete system calls, no
// set*id, no fork or exec, no scheduler or affinity changes.
const sandboxArg = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"

// vmDirName is the folder of an app's runtime folder its jailed QEMU may
// write (its sockets and console); the rest of the runtime folder is
// root's.
const vmDirName = "vm"

// jailRootDir is the empty folder each launcher mounts its root over, in
// its own mount namespace.
const jailRootDir = ".jail"

func (v *VMM) vmDir(app string) string { return filepath.Join(v.appDir(app), vmDirName) }

// setupJail fills in the defaults, refuses an id range that holds a host
// account and makes the guests' parent cgroup.
func (v *VMM) setupJail() error {
	j := &v.cfg.Jail
	if j.UIDBase == 0 {
		j.UIDBase = jail.DefaultUIDBase
	}
	if j.GIDBase == 0 {
		j.GIDBase = jail.DefaultGIDBase
	}
	if j.Count == 0 {
		j.Count = slot.Max
	}
	if j.CPUWeight == 0 {
		j.CPUWeight = jail.DefaultCPUWeight
	}
	if j.CgroupMount == "" {
		j.CgroupMount = jail.DefaultMount
	}
	if j.CgroupParent == "" {
		j.CgroupParent = jail.ParentFor(v.cfg.RuntimeDir)
	}
	v.ids = jail.Range{UIDBase: j.UIDBase, GIDBase: j.GIDBase, Count: j.Count}
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return fmt.Errorf("read /etc/passwd to check the jail's ids: %w", err)
	}
	group, err := os.ReadFile("/etc/group")
	if err != nil {
		return fmt.Errorf("read /etc/group to check the jail's ids: %w", err)
	}
	if err := v.ids.Check(passwd, group); err != nil {
		return err
	}
	if v.cgroups, err = jail.Detect(j.CgroupMount, j.CgroupParent); err != nil {
		return err
	}
	if err := v.cgroups.Setup(j.CPUWeight); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(v.cfg.RuntimeDir, jailRootDir), 0o700); err != nil {
		return fmt.Errorf("make the jails' mount point: %w", err)
	}
	return nil
}

// jailed is what launch prepares for one jailed QEMU.
type jailed struct {
	id   jail.Identity
	plan jail.Plan
	net  bool // an empty network namespace
}

// prepareJail grants m's guest its files and cgroup and plans its root.
// The files every guest reads go to the shared group, readable; the
// volume and the VMM's folder become the guest's uid's; the config drive
// its gid's, read-only.
func (v *VMM) prepareJail(m machine, restoring bool) (jailed, error) {
	id, err := v.ids.For(m.Spec.Slot)
	if err != nil {
		return jailed{}, fmt.Errorf("jail %s: %w", m.Spec.AppID, err)
	}
	shared := v.ids.SharedGID()
	ro := append([]string{m.Kernel, m.Initrd, m.Base}, m.Layers...)
	for _, p := range ro {
		if err := grant(p, -1, shared, 0o040); err != nil {
			return jailed{}, err
		}
	}
	if err := grant(m.Config, 0, id.GID, 0o040); err != nil {
		return jailed{}, err
	}
	if err := grant(m.Volume, id.UID, id.GID, 0o600); err != nil {
		return jailed{}, err
	}
	if err := grant(m.Dir, id.UID, id.GID, 0o700); err != nil {
		return jailed{}, err
	}
	kvm := m.Accel == "kvm"
	binds, err := jail.RootBinds(jail.Files{Program: v.cfg.QEMU, ReadOnly: append(ro, m.Config), ReadWrite: []string{m.Volume, m.Dir}, KVM: kvm})
	if err != nil {
		return jailed{}, err
	}
	groups := []int{shared}
	if kvm {
		if st, err := os.Stat("/dev/kvm"); err == nil {
			groups = append(groups, int(st.Sys().(*syscall.Stat_t).Gid))
		}
	}
	l := guestLimits(m)
	if restoring {
		// The state is read through the page cache, which charges the
		// cgroup beside the RAM it fills: lowered once the guest runs.
		l = l.WhileSnapshotting(m.memMiB())
	}
	vol, err := os.Stat(m.Volume)
	if err != nil {
		return jailed{}, fmt.Errorf("jail %s: %w", m.Spec.AppID, err)
	}
	daemonAdj, err := jail.SelfOOMScoreAdj()
	if err != nil {
		return jailed{}, err
	}
	procs, err := v.cgroups.Create(m.Spec.AppID, l)
	if err != nil {
		return jailed{}, err
	}
	return jailed{id: id, net: m.Spec.Network.Tap != "", plan: jail.Plan{
		Root: filepath.Join(v.cfg.RuntimeDir, jailRootDir), Binds: binds, CgroupProcs: procs,
		Identity: id, Groups: groups, Program: v.cfg.QEMU,
		// QEMU writes the volume in place, a sleep's state, and its
		// console, which this bounds too.
		Rlimits:     jail.Rlimits{NoFile: jail.NoFile, FileSize: jail.FileSizeFor(int64(m.memMiB())<<20, vol.Size())},
		OOMScoreAdj: jail.OOMScoreAdjAbove(daemonAdj),
	}}, nil
}

// guestLimits is a variable so a test can give one guest less memory than
// it touches.
var guestLimits = machine.limits

// limits are m's cgroup limits.
func (m machine) limits() jail.Limits {
	tcg := 0
	if m.Accel == "tcg" {
		tcg = tcgCacheMiB
	}
	return jail.LimitsFor(m.Spec.VCPUs, m.memMiB(), tcg)
}

func (m machine) memMiB() int {
	if m.Spec.MemoryMiB <= 0 {
		return 256
	}
	return m.Spec.MemoryMiB
}

// grant gives path to uid (-1 keeps it) and gid and adds bits to its mode.
func grant(path string, uid, gid int, bits fs.FileMode) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("jail: give %s to uid %d gid %d: %w", path, uid, gid, err)
	}
	if mode := st.Mode().Perm() | bits; mode != st.Mode().Perm() {
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("jail: %w", err)
		}
	}
	return nil
}

// openTap opens the persistent tap name for QEMU to be handed, so that
// QEMU needs neither CAP_NET_ADMIN nor the host's network namespace.
func openTap(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun for %s: %w", name, err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attach to tap %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun:"+name), nil
}

// unjail is what follows the end of a guest's QEMU (pid; 0 for a launch
// that never started one): the kill at its memory limit, if that is how
// it ended, is told in its message; its cgroup goes, and its files are
// root's again (nothing stays a gone guest's uid's). A newer guest of the
// app that already runs (another VMM of this process adopted the app and
// started it again) keeps its jail. It returns the message, or "".
func (v *VMM) unjail(app string, rec record, pid int) string {
	if pid != 0 {
		if pf, err := vmm.ReadPidfile(v.pidfile(app)); err == nil && pf.PID != pid && pf.Alive(v.bootID) {
			return ""
		}
		if _, err := os.Stat(filepath.Join(v.appDir(app), launchingFile)); err == nil {
			return ""
		}
	}
	msg := ""
	if n := v.cgroups.OOMKilled(app); n > 0 {
		msg = fmt.Sprintf("its VMM was killed at its memory limit of %d MiB (its cgroup's: the guest's %d MiB and QEMU's own use)", rec.MemoryLimit>>20, rec.MemoryMiB)
	}
	if err := v.cgroups.RemoveReaped(app); err != nil {
		log.Printf("nibrunnerd: %s: %v", app, err)
	}
	v.reclaim(app, rec)
	return msg
}

// reclaim gives what app's guest was lent back to root: vm/ and what its
// QEMU made there (by descriptor, never following a link the guest's uid
// planted: perm.Reclaim), its volume, and its config drive (its
// environment and secrets), which the next tenant of the slot, running as
// the same gid, must not read.
func (v *VMM) reclaim(app string, rec record) {
	lent := func(uid, gid uint32) bool {
		return v.ids.Count > 0 && (int(uid) >= v.ids.UIDBase && int(uid) < v.ids.UIDBase+v.ids.Count ||
			int(gid) >= v.ids.GIDBase && int(gid) < v.ids.GIDBase+v.ids.Count)
	}
	if err := perm.Reclaim(v.vmDir(app), lent); err != nil {
		log.Printf("nibrunnerd: %s: %v", app, err)
	}
	// Both in folders only root writes.
	if rec.Volume != "" {
		if err := os.Lchown(rec.Volume, 0, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Printf("nibrunnerd: %s: give its volume back to root: %v", app, err)
		}
	}
	config := filepath.Join(v.appDir(app), configDrive)
	if err := os.Lchown(config, 0, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Printf("nibrunnerd: %s: give its config drive back to root: %v", app, err)
	} else if err == nil {
		if err := os.Chmod(config, perm.Secret); err != nil {
			log.Printf("nibrunnerd: %s: give its config drive back to root: %v", app, err)
		}
	}
}

// fdArg names the nth file handed to QEMU (ExtraFiles start at fd 3).
func fdArg(n int) string { return strconv.Itoa(3 + n) }
