package jail

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// SplitDelegated is where, under cgroup v2, a daemon running in cgroup
// self (a path of /proc/self/cgroup's "0::" line) puts its guests and
// itself: both below self, as siblings, since v2 lets only a cgroup with
// no processes of its own share its controllers. A daemon in the root
// cgroup has nothing delegated and returns "", "".
func SplitDelegated(self string) (guests, daemon string) {
	self = strings.Trim(filepath.Clean("/"+self), "/")
	if self == "" {
		return "", ""
	}
	// A daemon restarted inside its leaf finds itself there already.
	if self == "daemon" {
		return "", ""
	}
	self = strings.TrimSuffix(self, "/daemon")
	return self + "/guests", self + "/daemon"
}

// DelegatedParent reads this process's cgroup and returns SplitDelegated
// of it under a cgroup v2 mount, or "", "" under v1.
func DelegatedParent(mount string) (guests, daemon string, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", "", nil
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", fmt.Errorf("jail: read this process's cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			g, d := SplitDelegated(p)
			return g, d, nil
		}
	}
	return "", "", nil
}

// MoveSelf moves this process into leaf, made if missing.
func MoveSelf(mount, leaf string) error {
	dir := filepath.Join(mount, leaf)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("jail: make the daemon's cgroup %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
		return fmt.Errorf("jail: move the daemon into %s: %w", dir, err)
	}
	return nil
}
