package qemu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/vmm"
)

// machine is everything that decides a guest's QEMU command line. The same
// machine gives the same arguments, which is what lets a snapshot taken of
// one process be restored into the next: QEMU needs the same devices on
// both sides of a migration.
type machine struct {
	QEMU    string
	Accel   string // "kvm" or "tcg"
	Kernel  string
	Initrd  string
	Base    string
	Layers  []string // image files, bottom first
	Volume  string
	Config  string // the config drive
	Dir     string // the app's runtime folder (sockets, console)
	Spec    vmm.Spec
	UserNet bool // user-mode networking with host forwards on loopback
	// TapFD is the fd QEMU is handed the slot's tap on (the jail opens
	// it), or 0 to open it by name.
	TapFD int
}

// Files in an app's runtime folder.
const (
	qmpSocket     = "qmp.sock"
	controlSocket = "control.sock"
	consoleFile   = "console.log"
	qemuLogFile   = "qemu.log"
	configDrive   = "config.img"
	recordFile    = "guest.json"
	// launchingFile marks a launch whose pidfile is not written yet.
	launchingFile = "launching"
)

// User-mode networking addresses (QEMU's defaults).
const (
	userNetGuest = "10.0.2.15/24"
	userNetGW    = "10.0.2.2"
	userNetDNS   = "10.0.2.3"
)

// kernelCmdline is the guest kernel's command line, bar the boot time.
func (m machine) kernelCmdline() string {
	// No init_on_free: it zeroes every page the kernel frees, and at the
	// end of boot the kernel frees all of RAM, so the host would hold the
	// whole guest from its first second. The balloon's free page reporting
	// hands free pages back instead, which also keeps snapshots small:
	// pages the host has dropped read as zero and migrate as markers.
	p := []string{"console=ttyS0", "reboot=t", "panic=-1", "quiet",
		guest.ParamReportingOrder + "=" + strconv.Itoa(reportingOrder)}
	if m.Accel == "tcg" {
		// Without it TCG boots hang at random before the timer is set up.
		p = append(p, "tsc_early_khz=2000000")
	}
	if n := m.guestNetwork(); n.IP != "" {
		p = append(p, guest.ParamIP+"="+n.IP, guest.ParamGateway+"="+n.Gateway)
		if n.DNS != "" {
			p = append(p, guest.ParamDNS+"="+n.DNS)
		}
	}
	return strings.Join(p, " ")
}

// guestNetwork is what the guest's init is told of its network: its
// address with prefix, its gateway and its name servers, as the kernel
// command line's nibrun.ip, nibrun.gw and nibrun.dns carry them at boot
// and a set-network request carries them at a wake elsewhere. The zero
// value is no network beyond loopback.
type guestNetwork struct {
	IP      string `json:"ip,omitempty"`
	Gateway string `json:"gateway,omitempty"`
	DNS     string `json:"dns,omitempty"` // comma-separated
}

func (m machine) guestNetwork() guestNetwork {
	n := m.Spec.Network
	switch {
	case n.Tap != "":
		g := guestNetwork{IP: fmt.Sprintf("%s/%d", n.GuestIPv4, n.PrefixLen), Gateway: n.HostIPv4.String()}
		servers := make([]string, len(n.DNS))
		for i, a := range n.DNS {
			servers[i] = a.String()
		}
		g.DNS = strings.Join(servers, ",")
		return g
	case m.UserNet:
		return guestNetwork{IP: userNetGuest, Gateway: userNetGW, DNS: userNetDNS}
	}
	return guestNetwork{}
}

// reportingOrder is the smallest free block, 2^order pages, the guest
// reports to the balloon: 128 KiB. Linux's default, the pageblock order
// (2 MiB), reports nothing until a zone has 64 MiB free beyond its low
// watermark (32 blocks of the order: PAGE_REPORTING_CAPACITY), so a
// 128 MiB guest never reported and the 16 MiB DMA zone of every guest,
// where the boot loader puts the compressed kernel, never did.
const reportingOrder = 5

// microvmMachine is QEMU's machine. acpi=off: with ACPI on (QEMU 7.2's
// default) microvm describes its virtio-mmio devices only in its ACPI
// tables, and the guest kernel (nibrunner/guestimage's, built without ACPI)
// finds them on the command line, where microvm names them with ACPI off,
// and its CPUs and IOAPIC in the MP table its firmware (qboot) writes.
const microvmMachine = "microvm,rtc=off,acpi=off"

// tcgCacheMiB bounds TCG's translation cache. QEMU's default for system
// emulation is 1 GiB, which an idle guest fills with pages the host must
// keep resident; a microVM running one program needs a fraction of it.
const tcgCacheMiB = 32

func (m machine) accelArg() string {
	if m.Accel == "tcg" {
		return "tcg,tb-size=" + strconv.Itoa(tcgCacheMiB)
	}
	return m.Accel
}

// args is the QEMU command line. bootTime (Unix seconds) goes on the kernel
// command line; it is left out of Hash because a restored guest keeps the
// clock it has.
func (m machine) args(bootTime int64) []string {
	s := m.Spec
	mem, cpus := s.MemoryMiB, s.VCPUs
	if mem <= 0 {
		mem = 256
	}
	if cpus <= 0 {
		cpus = 1
	}
	a := []string{
		"-name", "nibrun-" + s.AppID,
		"-M", microvmMachine, "-accel", m.accelArg(),
		"-m", strconv.Itoa(mem), "-smp", strconv.Itoa(cpus),
	}
	if m.Accel == "kvm" {
		// The host's CPU model: no emulated features to trap on.
		a = append(a, "-cpu", "host")
	}
	a = append(a,
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
	)
	a = append(a, consoleArgs()...)
	a = append(a,
		"-kernel", m.Kernel, "-initrd", m.Initrd,
		"-append", m.kernelCmdline()+" "+guest.ParamTime+"="+strconv.FormatInt(bootTime, 10),
		"-qmp", "unix:"+m.Dir+"/"+qmpSocket+",server=on,wait=off",
		"-chardev", "socket,id=ctl,path="+m.Dir+"/"+controlSocket+",server=on,wait=off",
		"-device", "virtio-serial-device", "-device", "virtserialport,chardev=ctl,name="+guest.ControlPortName,
		// The guest reports the free memory it has, in blocks, and QEMU
		// drops those pages from its mapping: the host gets back what an
		// idle guest does not use. No inflation is ever asked.
		"-device", "virtio-balloon-device,free-page-reporting=on",
	)
	drive := func(id, file, serial string, readOnly bool) {
		ro := "off"
		if readOnly {
			ro = "on"
		}
		a = append(a, "-drive", fmt.Sprintf("id=%s,file=%s,format=raw,if=none,readonly=%s", id, file, ro),
			"-device", fmt.Sprintf("virtio-blk-device,drive=%s,serial=%s", id, serial))
	}
	drive("cfg", m.Config, guest.SerialConfig, true)
	drive("base", m.Base, guest.SerialBase, true)
	for i, l := range m.Layers {
		drive("l"+strconv.Itoa(i), l, guest.LayerSerial(i), true)
	}
	drive("vol", m.Volume, guest.SerialVolume, false)
	mac := fmt.Sprintf("52:54:00:6e:%02x:%02x", (s.Slot>>8)&0xff, s.Slot&0xff)
	switch {
	case s.Network.Tap != "":
		nd := "tap,id=n0,ifname=" + s.Network.Tap + ",script=no,downscript=no"
		if m.TapFD > 0 {
			nd = "tap,id=n0,fd=" + strconv.Itoa(m.TapFD)
		}
		a = append(a, "-netdev", nd, "-device", "virtio-net-device,netdev=n0,mac="+mac)
	case m.UserNet:
		// restrict=on: slirp routes nothing the guest sends to the host
		// or beyond (10.0.2.2 is not the host's loopback any more); the
		// hostfwd forwards, the platform's own, still reach the guest.
		fwd := []string{"user", "id=n0", "restrict=on"}
		if s.Network.HostPort > 0 && s.HTTPPort > 0 {
			fwd = append(fwd, fmt.Sprintf("hostfwd=tcp:127.0.0.1:%d-:%d", s.Network.HostPort, s.HTTPPort))
			for i, p := range s.Ports {
				fwd = append(fwd, fmt.Sprintf("hostfwd=tcp:127.0.0.1:%d-:%d", s.Network.HostPort+1+i, p.GuestPort),
					fmt.Sprintf("hostfwd=udp:127.0.0.1:%d-:%d", s.Network.HostPort+1+i, p.GuestPort))
			}
		}
		a = append(a, "-netdev", strings.Join(fwd, ","), "-device", "virtio-net-device,netdev=n0,mac="+mac)
	}
	return a
}

// Hash identifies the machine's devices for a snapshot's stamp: a
// migration stream restores only into the same devices, in the same order,
// with the same memory size, vCPUs and accelerator. It is taken of the
// command line with everything that names this host or this slot made the
// same (the files' paths, the tap and its descriptor, the slot's MAC, the
// host ports, the addresses on the kernel command line): those are not in
// the stream, so a snapshot restores into another slot or onto another
// host, and the guest is told its new network after it resumes (see
// restore). Whether the guest has a network at all is kept: it is a device.
func (m machine) Hash() string {
	n := m
	n.Kernel, n.Initrd, n.Base, n.Volume, n.Config, n.Dir = "kernel", "initrd", "base", "volume", "config", "dir"
	n.Layers = make([]string, len(m.Layers))
	for i := range n.Layers {
		n.Layers[i] = "layer" + strconv.Itoa(i)
	}
	n.TapFD = 0
	s := m.Spec
	n.Spec = vmm.Spec{AppID: "app", MemoryMiB: s.MemoryMiB, VCPUs: s.VCPUs}
	n.UserNet = s.Network.Tap != "" || m.UserNet
	a := n.args(0)
	h := sha256.New()
	for _, s := range a {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// machineType names QEMU's machine and accelerator for a snapshot's stamp;
// under KVM the guest runs on the host's own CPU model (-cpu host), which
// is named too: a stream restores only onto the CPU features it was saved
// with.
func (m machine) machineType() string {
	t := microvmMachine + " under " + m.Accel
	if m.Accel == "kvm" {
		t += " on " + hostCPUModel()
	}
	return t
}

// hostCPUModel is the host CPU's model name from /proc/cpuinfo.
func hostCPUModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "an unknown CPU"
}

// endpoint is where the daemon reaches the guest's HTTP port.
func (m machine) endpoint() string {
	s := m.Spec
	switch {
	case s.Network.Tap != "" && s.Network.GuestIPv4.IsValid():
		return fmt.Sprintf("%s:%d", s.Network.GuestIPv4, s.HTTPPort)
	case m.UserNet && s.Network.HostPort > 0:
		return fmt.Sprintf("127.0.0.1:%d", s.Network.HostPort)
	}
	return ""
}

// guestConfig is what the config drive tells the init.
func guestConfig(s vmm.Spec) guest.Config {
	r := s.Restart
	return guest.Config{
		AppID: s.AppID, DeploymentID: s.DeploymentID, Layers: len(s.Layers),
		Program: s.Command.Program, Args: s.Command.Args, WorkingDirectory: s.Command.WorkingDirectory,
		Environment: s.Command.Environment, HTTPPort: s.HTTPPort, Hostname: s.Hostname,
		Restart: guest.RestartPolicy{
			MaxRestarts: r.MaxRestarts, InitialBackoffMs: r.InitialBackoff.Milliseconds(),
			MaxBackoffMs: r.MaxBackoff.Milliseconds(), BackoffFactor: r.BackoffFactor, ResetAfterMs: r.ResetAfter.Milliseconds(),
		},
	}
}
