package qemu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"alpnib.dev/internal/atomicfile"
)

// Files in an app's snapshot folder.
const (
	stateFile = "state"
	stampFile = "stamp.json"
)

// Stamp says what a snapshot can be restored into. Any field that differs
// from the guest about to wake means the snapshot is not used: memory saved
// under another deployment, guest image, host boot or slot would wake into
// the wrong world.
type Stamp struct {
	AppID        string `json:"appId"`
	DeploymentID string `json:"deploymentId"`
	GuestImage   string `json:"guestImage"`
	BootID       string `json:"bootId"`
	Slot         int    `json:"slot"`
	// Machine hashes the QEMU command line (devices, memory, accelerator):
	// a migration stream restores only into the same machine. (ours)
	Machine   string `json:"machine"`
	StateSize int64  `json:"stateSize"`
	SavedAtMs int64  `json:"savedAtMs"`
}

// Mismatch names the first field in which s differs from want, or "".
func (s Stamp) Mismatch(want Stamp) string {
	switch {
	case s.AppID != want.AppID:
		return "app"
	case s.DeploymentID != want.DeploymentID:
		return fmt.Sprintf("deployment (snapshot %s, now %s)", s.DeploymentID, want.DeploymentID)
	case s.GuestImage != want.GuestImage:
		return fmt.Sprintf("guest image (snapshot %s, now %s)", s.GuestImage, want.GuestImage)
	case s.BootID != want.BootID:
		return "host boot"
	case s.Slot != want.Slot:
		return fmt.Sprintf("slot (snapshot %d, now %d)", s.Slot, want.Slot)
	case s.Machine != want.Machine:
		return "machine"
	}
	return ""
}

func readStamp(dir string) (Stamp, error) {
	var s Stamp
	b, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("read snapshot stamp: %w", err)
	}
	return s, nil
}

func writeStamp(dir string, s Stamp) error {
	b, _ := json.MarshalIndent(s, "", "  ")
	return atomicfile.WriteFile(filepath.Join(dir, stampFile), append(b, '\n'), 0o640)
}
