package qemu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pssBytes reads a process's proportional set size from
// /proc/<pid>/smaps_rollup: its private pages and its share of the pages
// it maps with others (QEMU's code and libraries, split among every QEMU).
// It is what the process costs the host, the figure admission counts.
func pssBytes(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	return parsePss(b)
}

// parsePss finds the Pss line of a smaps_rollup.
func parsePss(b []byte) (uint64, error) {
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pss:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps_rollup: %q: %w", l, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("smaps_rollup has no Pss line")
}
