package vmm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"alpnib.dev/internal/atomicfile"
)

// Pidfile is what a VMM writes beside each guest it starts so that a
// restarted daemon can adopt the guest instead of booting it again. The
// process start tick (field 22 of /proc/PID/stat) guards against a PID
// that was reused by another process after the guest died.
type Pidfile struct {
	AppID        string    `json:"appId"`
	DeploymentID string    `json:"deploymentId"`
	Slot         int       `json:"slot"`
	PID          int       `json:"pid"`
	BootID       string    `json:"bootId"`
	StartTicks   uint64    `json:"startTicks"`
	StartedAt    time.Time `json:"startedAt"`
	Endpoint     string    `json:"endpoint"`
}

// WritePidfile writes p to path atomically.
func WritePidfile(path string, p Pidfile) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode pidfile for %s: %w", p.AppID, err)
	}
	return atomicfile.WriteFile(path, b, 0o640)
}

// ReadPidfile reads a pidfile written by WritePidfile.
func ReadPidfile(path string) (Pidfile, error) {
	var p Pidfile
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("read pidfile %s: %w", path, err)
	}
	return p, nil
}

// ReadPidfiles reads every *.pid file in dir; unreadable ones are skipped,
// since a half-written pidfile cannot exist (they are written atomically)
// and a corrupt one names no guest we could adopt.
func ReadPidfiles(dir string) ([]Pidfile, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return nil, err
	}
	var out []Pidfile
	for _, n := range names {
		p, err := ReadPidfile(n)
		if err != nil {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// BootID returns this host boot's id, which changes at every reboot.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// StartTicks returns the start time of process pid in clock ticks since
// boot, as the kernel reports it.
func StartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, errors.New("short /proc stat")
	}
	if fields[0] == "Z" {
		return 0, errors.New("zombie")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Alive reports whether the guest p names is still the process running
// under its PID on this boot.
func (p Pidfile) Alive(bootID string) bool {
	if p.PID <= 0 || p.BootID != bootID {
		return false
	}
	t, err := StartTicks(p.PID)
	return err == nil && t == p.StartTicks
}
