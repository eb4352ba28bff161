package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"alpnib.dev/nibrunner/guest"
)

// measure reads memory, CPU time, eth0's byte counters and uptime from
// /proc.
func measure() (m guest.Measurement, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return m, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			m.MemoryTotalBytes = kb << 10
		case "MemAvailable:":
			m.MemoryAvailableBytes = kb << 10
		}
	}
	if b, err = os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal: all but idle
		// and iowait are time spent working, in USER_HZ (100 per second).
		for i, v := range f {
			if i == 0 || i == 4 || i == 5 || i > 8 {
				continue
			}
			n, _ := strconv.ParseUint(v, 10, 64)
			m.CPUTimeMs += n * 10
		}
	}
	if b, err = os.ReadFile("/proc/net/dev"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			name, rest, ok := strings.Cut(l, ":")
			if !ok || strings.TrimSpace(name) != "eth0" {
				continue
			}
			f := strings.Fields(rest)
			if len(f) >= 9 {
				m.RxBytes, _ = strconv.ParseUint(f[0], 10, 64)
				m.TxBytes, _ = strconv.ParseUint(f[8], 10, 64)
			}
		}
	}
	if b, err = os.ReadFile("/proc/uptime"); err == nil {
		var up float64
		if _, err := fmt.Sscanf(string(b), "%f", &up); err == nil {
			m.UptimeMs = uint64(up * 1000)
		}
	}
	return m, nil
}
