package qemu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// hostShare is what one QEMU holds of the host: its proportional set size
// (its private pages and its share of the pages it maps with others:
// QEMU's code and libraries, split among every QEMU), and of that the part
// that is TCG's translation cache (the anonymous executable mapping; KVM
// hosts have none) and the part that is guest RAM.
type hostShare struct {
	PSS, TCG, GuestRAM uint64
}

// readHostShare reads /proc/<pid>/smaps; memBytes is the guest's memory
// size, which finds its RAM among the mappings.
func readHostShare(pid int, memBytes uint64) (hostShare, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return hostShare{}, err
	}
	ms, err := parseSmaps(b)
	if err != nil {
		return hostShare{}, err
	}
	return shareOf(ms, memBytes), nil
}

func shareOf(ms []smapsMapping, memBytes uint64) hostShare {
	var h hostShare
	for _, m := range ms {
		pss := m.kB["Pss"] << 10
		h.PSS += pss
		switch {
		case m.anonymous && m.exec && m.size >= 8<<20:
			h.TCG += pss
		case m.isGuestRAM(memBytes):
			h.GuestRAM = max(h.GuestRAM, pss)
		}
	}
	return h
}

// smapsMapping is one mapping in /proc/<pid>/smaps: its size, whether it
// is anonymous (no file) and executable, and its "Name: N kB" counters.
type smapsMapping struct {
	size            uint64
	anonymous, exec bool
	kB              map[string]uint64
}

// isGuestRAM says whether m is the guest's RAM: the one anonymous mapping
// of the guest's memory size (QEMU may round it up to a huge-page
// boundary, hence the slack).
func (m smapsMapping) isGuestRAM(memBytes uint64) bool {
	return m.anonymous && m.size >= memBytes && m.size <= memBytes+4<<20
}

// parseSmaps splits a smaps file into its mappings.
func parseSmaps(smaps []byte) ([]smapsMapping, error) {
	var out []smapsMapping
	for _, l := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			m := smapsMapping{anonymous: len(f) == 5, exec: strings.Contains(f[1], "x"), kB: map[string]uint64{}}
			if err1 == nil && err2 == nil && z >= a {
				m.size = z - a
			}
			out = append(out, m)
			continue
		}
		if len(f) == 3 && f[2] == "kB" && strings.HasSuffix(f[0], ":") && len(out) > 0 {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("smaps: %q: %w", l, err)
			}
			out[len(out)-1].kB[strings.TrimSuffix(f[0], ":")] = kb
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("smaps lists no mapping")
	}
	return out, nil
}
