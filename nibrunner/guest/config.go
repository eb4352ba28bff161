// Package guest is the contract between the host and nibrun-init, the PID 1
// inside every nibrunner microVM. Both sides import it, so a change to the
// contract is one change in one place:
//
//   - the config drive: a small raw virtio-blk drive that carries the
//     instance's Config as JSON behind a magic header (the kernel command
//     line is too small for a tenant environment, which may hold 32 KiB
//     values);
//   - drive serials: every drive the host attaches carries a virtio-blk
//     serial naming its role, so the guest finds its drives by what they
//     are rather than by the order the kernel happened to probe them in;
//   - the kernel command line parameters (network, boot facts);
//   - the control channel: newline-delimited JSON messages over the
//     virtio-serial port named nibrun.control (see protocol.go).
package guest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/backoff"
)

// Drive serials. QEMU limits a virtio-blk serial to 20 bytes.
const (
	SerialConfig = "nibrun-config"
	SerialBase   = "nibrun-base"
	SerialVolume = "nibrun-volume"
	// SerialLayerPrefix is followed by the layer's index, 0 at the bottom.
	SerialLayerPrefix = "nibrun-layer-"
)

// LayerSerial is the drive serial of the layer at index i (0 = bottom).
func LayerSerial(i int) string { return fmt.Sprintf("%s%d", SerialLayerPrefix, i) }

// ControlPortName is the virtio-serial port name of the control channel.
const ControlPortName = "nibrun.control"

// The overlay's writable directories live on the volume: everything the
// tenant writes anywhere in its root persists there and nowhere else.
// VolumeUpperDir is the overlay upper directory (the app's root as written),
// VolumeWorkDir overlayfs's scratch directory; both are at the top of the
// volume's filesystem. A volume seeded with initial contents holds them
// under VolumeUpperDir + destinationPath.
const (
	VolumeUpperDir = "root"
	VolumeWorkDir  = ".overlay-work"
)

// TenantUID and TenantGID are the ids the tenant runs as (nobody/nogroup).
const (
	TenantUID = 65534
	TenantGID = 65534
)

// Config is what the host tells the guest's init about the instance.
type Config struct {
	AppID        string `json:"appId"`
	DeploymentID string `json:"deploymentId"`
	// Layers is how many layer drives there are (serials nibrun-layer-0..).
	Layers           int               `json:"layers"`
	Program          string            `json:"program"`
	Args             []string          `json:"args,omitempty"`
	WorkingDirectory string            `json:"workingDirectory"`
	Environment      map[string]string `json:"environment,omitempty"`
	HTTPPort         int               `json:"httpPort"`
	Hostname         string            `json:"hostname,omitempty"`
	Restart          RestartPolicy     `json:"restartPolicy"`
}

// RestartPolicy is the document's restart policy in milliseconds, applied by
// the init to the tenant process.
type RestartPolicy struct {
	MaxRestarts      int     `json:"maxRestarts"`
	InitialBackoffMs int64   `json:"initialBackoffMs"`
	MaxBackoffMs     int64   `json:"maxBackoffMs"`
	BackoffFactor    float64 `json:"backoffFactor"`
	ResetAfterMs     int64   `json:"resetAfterMs"`
}

// Delay is the wait before restart number n (1-based):
// min(initial·factor^(n−1), max), read by nibrunner/backoff.Delay, the one
// reading the host's VM restarts use too (so a maxBackoffMs of 0 restarts
// at once on both sides).
func (p RestartPolicy) Delay(n int) time.Duration {
	return backoff.Delay(backoff.Millis(p.InitialBackoffMs), backoff.Millis(p.MaxBackoffMs), p.BackoffFactor, n)
}

// configMagic opens a config drive; a drive without it is not one.
var configMagic = []byte("NIBRUNCFG1\n")

// sectorSize is the granularity a raw drive image is padded to.
const sectorSize = 512

// MaxConfigBytes bounds the JSON a config drive may hold: 64 environment
// values of 32 KiB and 64 arguments of 4 KiB fit with room to spare.
const MaxConfigBytes = 8 << 20

// EncodeDrive renders c as the bytes of a raw config drive: the magic, a
// big-endian uint32 length, the JSON, zero padding to a whole sector.
func EncodeDrive(c Config) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode guest config: %w", err)
	}
	if len(body) > MaxConfigBytes {
		return nil, fmt.Errorf("guest config is %d bytes, more than the %d a config drive holds", len(body), MaxConfigBytes)
	}
	var b bytes.Buffer
	b.Write(configMagic)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(body)))
	b.Write(body)
	if pad := b.Len() % sectorSize; pad != 0 {
		b.Write(make([]byte, sectorSize-pad))
	}
	return b.Bytes(), nil
}

// ErrNotConfigDrive says the bytes do not start with the config magic.
var ErrNotConfigDrive = errors.New("not a nibrunner config drive")

// DecodeDrive reads a Config from the start of a config drive.
func DecodeDrive(b []byte) (Config, error) {
	var c Config
	if !bytes.HasPrefix(b, configMagic) {
		return c, ErrNotConfigDrive
	}
	b = b[len(configMagic):]
	if len(b) < 4 {
		return c, errors.New("config drive ends inside its length")
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if n > MaxConfigBytes || int(n) > len(b) {
		return c, fmt.Errorf("config drive claims %d bytes of config but holds %d", n, len(b))
	}
	if err := json.Unmarshal(b[:n], &c); err != nil {
		return c, fmt.Errorf("decode guest config: %w", err)
	}
	return c, nil
}

// Where the initramfs keeps the kernel modules the init loads: each module
// file directly in ModulesDir, and ModulesOrderFile listing their file names
// one per line in an order that loads every dependency first.
const (
	ModulesDir       = "/lib/modules"
	ModulesOrderFile = "/lib/modules/load-order"
)

// Kernel command line parameters the host sets for the init.
const (
	// ParamIP is the guest's address with prefix, e.g. 10.201.0.2/30.
	ParamIP = "nibrun.ip"
	// ParamGateway is the guest's default gateway.
	ParamGateway = "nibrun.gw"
	// ParamDNS is the name servers the guest's resolv.conf names, in
	// order, separated by commas.
	ParamDNS = "nibrun.dns"
	// ParamTime is the host's clock at boot in Unix seconds (microvm runs
	// without an RTC).
	ParamTime = "nibrun.time"
	// ParamProbe asks the init to print ProbeOK on the console and reset at
	// once: the host boots it to learn whether an accelerator works.
	ParamProbe = "nibrun.probe"
	// ParamReportingOrder is Linux's own parameter for the smallest free
	// block (2^order pages) the guest reports to the balloon. Linux 6.1
	// puts its default back when the balloon registers, so the init
	// writes it again once the balloon's module is loaded.
	ParamReportingOrder = "page_reporting.page_reporting_order"
)

// ReportingOrderFile is where the init sets the reporting order.
const ReportingOrderFile = "/sys/module/page_reporting/parameters/page_reporting_order"

// ProbeOK is what a probe boot prints on the console.
const ProbeOK = "nibrun-init: probe ok"
