package jail

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Rlimits are the resource limits the launcher sets on its program, soft
// and hard alike, as Firecracker's jailer sets RLIMIT_NOFILE and
// RLIMIT_FSIZE on Firecracker (src/jailer/src/resource_limits.rs).
type Rlimits struct {
	NoFile   uint64 `json:"noFile"`
	FileSize uint64 `json:"fileSize"`
}

// NoFile is every jailed program's RLIMIT_NOFILE: the jailer's default
// (2048). A QEMU holds a few dozen descriptors: its drives, sockets, and
// an eventfd or two per virtqueue and vCPU.
const NoFile = 2048

// FileSizeMargin is what RLIMIT_FSIZE allows past the largest file a VMM
// legitimately writes: QEMU's own log and the device state a snapshot
// carries beside the guest's RAM.
const FileSizeMargin = 64 << 20

// FileSizeFor is the RLIMIT_FSIZE of a VMM whose guest has memBytes of RAM
// and whose writable disks are disks bytes long. Its largest legitimate
// write is the larger of:
//   - a sleep's state file: every page of RAM once (the guest is stopped
//     before the migration, so there is one pass), each with an 8-byte
//     header in QEMU's stream, so RAM plus 1/256 of it bounds it;
//   - a volume, written in place at offsets below its size (it grows only
//     while no VMM runs).
//
// FileSizeMargin is added on top. The same bound holds QEMU's console
// file (-serial file:), which is all it bounds there: a guest's root can
// still write that much to its serial port.
func FileSizeFor(memBytes int64, disks ...int64) uint64 {
	largest := max(memBytes, 0) + max(memBytes, 0)/256
	for _, d := range disks {
		largest = max(largest, d)
	}
	return uint64(largest) + FileSizeMargin
}

func (r Rlimits) check() error {
	if r.NoFile == 0 || r.FileSize == 0 || r.NoFile == unix.RLIM_INFINITY || r.FileSize == unix.RLIM_INFINITY {
		return fmt.Errorf("jail: RLIMIT_NOFILE %d and RLIMIT_FSIZE %d must both be finite and above 0", r.NoFile, r.FileSize)
	}
	return nil
}

// set installs r on this process.
func (r Rlimits) set() error {
	for _, l := range []struct {
		name     string
		resource int
		v        uint64
	}{{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, r.NoFile}, {"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, r.FileSize}} {
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("set %s to %d: %w", l.name, l.v, err)
		}
	}
	return nil
}

// GuestOOMScoreAdj is the oom_score_adj of every jailed VMM: above every
// host service at the kernel's default of 0, so that a host-wide OOM
// takes a guest before sshd or the daemon (whose unit sets -900), and
// below 1000, which is left for whatever an operator wants killed first.
const GuestOOMScoreAdj = 500

// OOMScoreAdjAbove is the oom_score_adj a VMM gets beside a daemon at
// daemon: GuestOOMScoreAdj, or one above the daemon's own when that is
// higher (up to the kernel's 1000).
func OOMScoreAdjAbove(daemon int) int {
	return min(max(GuestOOMScoreAdj, daemon+1), 1000)
}

// SelfOOMScoreAdj reads this process's oom_score_adj.
func SelfOOMScoreAdj() (int, error) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, fmt.Errorf("jail: read this process's oom_score_adj: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("jail: /proc/self/oom_score_adj holds %q: %w", b, err)
	}
	return n, nil
}
