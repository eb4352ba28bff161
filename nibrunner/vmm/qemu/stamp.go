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

// stampFormat is the format of the stamps this build writes. Format 1
// (no format field) keyed a snapshot to its host boot and slot; format 2
// keys it to what a migration stream really needs, so a snapshot wakes
// after a host reboot, in another slot, or on another host.
const stampFormat = 2

// Stamp says what a snapshot can be restored into. Any field Mismatch
// reads that differs from the guest about to wake means the snapshot is not
// used: memory saved under another deployment or guest image would wake
// into the wrong world, and QEMU restores a migration stream only into the
// same QEMU, machine, memory size and devices. What names this host or
// slot (the tap, the MAC, the addresses, the files' paths) is not in the
// stream: a guest woken elsewhere is told its new network (Network).
type Stamp struct {
	Format       int    `json:"format"`
	AppID        string `json:"appId"`
	DeploymentID string `json:"deploymentId"`
	GuestImage   string `json:"guestImage"`
	// QEMU is QEMU's version: microvm is not a versioned machine type, so
	// a stream is read only by the QEMU that wrote it.
	QEMU string `json:"qemu"`
	// MachineType is QEMU's machine and accelerator (and, under KVM, the
	// host CPU's model).
	MachineType string `json:"machineType"`
	// GuestKernel is the guest kernel's release: the kernel is in the
	// saved memory, and the guest image names the kernel it boots.
	GuestKernel string `json:"guestKernel"`
	MemoryMiB   int    `json:"memoryMiB"`
	// Machine hashes the QEMU command line's devices (machine.Hash), with
	// what names this host or slot left out. (ours)
	Machine string `json:"machine"`
	// Network is what the guest was told of its network; every wake tells
	// the guest the one it has now. Not matched.
	Network guestNetwork `json:"network"`
	// BootID is the boot of the host that saved it. Not matched.
	BootID    string `json:"bootId"`
	StateSize int64  `json:"stateSize"`
	SavedAtMs int64  `json:"savedAtMs"`
}

// Mismatch says in a sentence why a snapshot stamped s cannot be restored
// into the guest want describes, or "" when it can.
func (s Stamp) Mismatch(want Stamp) string {
	switch {
	case s.Format < stampFormat:
		return fmt.Sprintf("the snapshot's stamp is of format %d, which keyed it to its host boot and slot; this host reads format %d", s.Format, stampFormat)
	case s.Format > stampFormat:
		return fmt.Sprintf("the snapshot's stamp is of format %d, newer than this host's %d", s.Format, stampFormat)
	case s.AppID != want.AppID:
		return fmt.Sprintf("the snapshot is of app %q, not %q", s.AppID, want.AppID)
	case s.DeploymentID != want.DeploymentID:
		return fmt.Sprintf("the snapshot is of deployment %s, and the app now runs deployment %s", s.DeploymentID, want.DeploymentID)
	case s.GuestImage != want.GuestImage:
		return fmt.Sprintf("the snapshot was taken in guest image %s, and this host boots guest image %s", s.GuestImage, want.GuestImage)
	case s.QEMU != want.QEMU:
		return fmt.Sprintf("the snapshot was saved by QEMU %s, and this host runs QEMU %s: QEMU reads a microvm's saved state only in the version that wrote it", orUnknown(s.QEMU), orUnknown(want.QEMU))
	case s.MachineType != want.MachineType:
		return fmt.Sprintf("the snapshot's machine is %s, and this host's is %s", orUnknown(s.MachineType), orUnknown(want.MachineType))
	case s.GuestKernel != want.GuestKernel:
		return fmt.Sprintf("the snapshot's guest kernel is %s, and this host boots %s", orUnknown(s.GuestKernel), orUnknown(want.GuestKernel))
	case s.MemoryMiB != want.MemoryMiB:
		return fmt.Sprintf("the snapshot holds %d MiB of memory, and the app now has %d MiB", s.MemoryMiB, want.MemoryMiB)
	case s.Machine != want.Machine:
		return "the snapshot's devices (vCPUs, drives, network) are not the ones the app now has"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
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
