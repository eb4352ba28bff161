package jail

import (
	"bufio"
	"strconv"
	"strings"
)

// Version is a cgroup hierarchy's version.
type Version int

// The two cgroup versions: v1 has a hierarchy per controller, v2 one
// unified hierarchy.
const (
	V1 Version = 1
	V2 Version = 2
)

func (v Version) String() string { return "cgroup v" + strconv.Itoa(int(v)) }

// Write is one value written to one cgroup file. Controller names the v1
// hierarchy the file is in (cpu, memory, pids); it is "" under v2.
type Write struct {
	Controller string
	File       string
	Value      string
}

// V1Controllers are the v1 hierarchies a guest's cgroup is made in.
var V1Controllers = []string{"cpu", "memory", "pids"}

// V2Controllers are what a v2 parent enables for its children.
const V2Controllers = "+cpu +memory +pids"

// GuestWrites are the writes that give a guest's cgroup l. Under v1 with
// swap accounting (memsw), the memory+swap limit is the memory limit,
// which is swap 0; v1 refuses a memory limit above the memory+swap one
// and the reverse, so raising sets memsw first and lowering sets it last.
func GuestWrites(v Version, l Limits, memsw, raising bool) []Write {
	mem := strconv.FormatInt(l.MemoryMax, 10)
	pids := strconv.FormatInt(l.PIDsMax, 10)
	if v == V2 {
		return []Write{
			{"", "cpu.max", strconv.FormatInt(l.CPUQuotaUs, 10) + " " + strconv.FormatInt(l.CPUPeriodUs, 10)},
			{"", "memory.max", mem},
			{"", "memory.swap.max", "0"},
			// The VMM is one process; if the kernel must kill in it, it
			// kills it whole rather than leave a QEMU without a thread.
			{"", "memory.oom.group", "1"},
			{"", "pids.max", pids},
		}
	}
	w := []Write{
		{"cpu", "cpu.cfs_period_us", strconv.FormatInt(l.CPUPeriodUs, 10)},
		{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(l.CPUQuotaUs, 10)},
		{"memory", "memory.swappiness", "0"},
	}
	limit := Write{"memory", "memory.limit_in_bytes", mem}
	switch {
	case !memsw:
		w = append(w, limit)
	case raising:
		w = append(w, Write{"memory", "memory.memsw.limit_in_bytes", mem}, limit)
	default:
		w = append(w, limit, Write{"memory", "memory.memsw.limit_in_bytes", mem})
	}
	return append(w, Write{"pids", "pids.max", pids})
}

// MemoryWrites are the writes that change only a guest's memory limit to
// l's, raising or lowering it.
func MemoryWrites(v Version, l Limits, memsw, raising bool) []Write {
	var out []Write
	for _, w := range GuestWrites(v, l, memsw, raising) {
		switch w.File {
		case "memory.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes":
			out = append(out, w)
		}
	}
	return out
}

// ParentWrites give the parent of every guest its CPU weight (the
// daemon's share against all guests together) and, under v2, its
// children their controllers.
func ParentWrites(v Version, weight int) []Write {
	if v == V2 {
		return []Write{
			{"", "cpu.weight", strconv.Itoa(weight)},
			{"", "cgroup.subtree_control", V2Controllers},
		}
	}
	return []Write{{"cpu", "cpu.shares", strconv.FormatInt(SharesOfWeight(weight), 10)}}
}

// EventsFile is the file that counts a cgroup's OOM kills.
func EventsFile(v Version) Write {
	if v == V2 {
		return Write{File: "memory.events"}
	}
	return Write{Controller: "memory", File: "memory.oom_control"}
}

// OOMKills reads the oom_kill count from memory.events (v2) or
// memory.oom_control (v1): lines of "key value".
func OOMKills(events string) int {
	sc := bufio.NewScanner(strings.NewReader(events))
	for sc.Scan() {
		k, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if ok && k == "oom_kill" {
			n, _ := strconv.Atoi(strings.TrimSpace(val))
			return n
		}
	}
	return 0
}
