// Package qemu runs nibrunner guests as QEMU microvm machines driven over
// QMP. It implements vmm.VMM.
//
// Each guest is one qemu-system-x86_64 process in its own session and its
// own jail (nibrunner/jail: a uid of its own, a root holding only its
// files, no capability, QEMU's seccomp sandbox, a cgroup with CPU, memory
// and process limits), so it outlives the daemon; a pidfile (vmm.Pidfile) and a record beside it let a
// restarted daemon adopt it: same boot id, PID alive with the same start
// time, command line naming this app's QMP socket. The guest's serial
// console goes to a per-app file truncated at each start; logs, exit codes,
// freeze/thaw and measurements travel over the virtio-serial control port
// (nibrunner/guest). KVM is used when a probe boot succeeds, TCG otherwise.
//
// Sleep freezes the guest's volume through its init, pauses the guest and
// migrates its state to a file the daemon opens and hands QEMU over QMP
// (getfd, then migrate fd:), stamps it and ends the process; Wake starts
// the same machine with -incoming fd: on that file, opened likewise, resumes it and thaws its volume, or boots cold when the stamp does
// not match.
package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/vmm"
)

// Config is how the daemon sets the VMM up.
type Config struct {
	Image guestimage.Image
	// RuntimeDir holds pidfiles and a folder per app (sockets, console,
	// config drive). Unix socket paths are limited to 107 bytes, so keep it
	// short (/run/nibrunner).
	RuntimeDir  string
	SnapshotDir string
	// QEMU is the emulator binary; empty means qemu-system-x86_64 on PATH.
	QEMU string
	// Accel forces "kvm" or "tcg"; empty probes (see chooseAccel).
	Accel string
	// UserNetwork gives a guest without a tap QEMU's user-mode network,
	// forwarding 127.0.0.1:HostPort (and the raw ports after it) to the
	// guest. For tests and hosts without root networking. (ours)
	UserNetwork bool
	// OnMessage receives what guests send besides replies: logs, starts,
	// exits. It must not block.
	OnMessage func(appID string, m guest.Message)
	// Jail is how each guest's QEMU is jailed.
	Jail Jail
}

// VMM drives QEMU guests.
type VMM struct {
	cfg     Config
	bootID  string
	version string

	accelOnce sync.Once
	// accel is the accelerator once chosen (or forced by Config.Accel);
	// nil before. Version reads it without probing.
	accel atomic.Pointer[string]

	ids     jail.Range
	cgroups jail.Cgroups
	// unjailed launches QEMU as the builds before the jail did, for the
	// benchmark that measures what the jail costs; nothing else sets it.
	unjailed bool

	mu     sync.Mutex
	guests map[string]*vmGuest
}

var _ vmm.VMM = (*VMM)(nil)

// New prepares the folders, removes snapshots from earlier host boots, and
// adopts the guests its pidfiles name.
func New(ctx context.Context, cfg Config) (*VMM, error) {
	if cfg.QEMU == "" {
		p, err := exec.LookPath("qemu-system-x86_64")
		if err != nil {
			return nil, fmt.Errorf("find QEMU (Debian qemu-system-x86): %w", err)
		}
		cfg.QEMU = p
	}
	if cfg.Accel != "" && cfg.Accel != "kvm" && cfg.Accel != "tcg" {
		return nil, fmt.Errorf("accelerator %q is neither kvm nor tcg", cfg.Accel)
	}
	for _, d := range []*string{&cfg.RuntimeDir, &cfg.SnapshotDir} {
		if *d == "" {
			return nil, errors.New("the VMM needs a runtime and a snapshot folder")
		}
		abs, err := filepath.Abs(*d)
		if err != nil {
			return nil, fmt.Errorf("VMM folder %s: %w", *d, err)
		}
		*d = abs
		if err := os.MkdirAll(abs, perm.Dir); err != nil {
			return nil, fmt.Errorf("make VMM folder: %w", err)
		}
	}
	if err := noHugePages(); err != nil {
		return nil, err
	}
	bootID, err := vmm.BootID()
	if err != nil {
		return nil, err
	}
	ver, err := qemuVersion(ctx, cfg.QEMU)
	if err != nil {
		return nil, err
	}
	v := &VMM{cfg: cfg, bootID: bootID, version: ver, guests: map[string]*vmGuest{}}
	if cfg.Accel != "" {
		v.accel.Store(&cfg.Accel)
	}
	if err := v.setupJail(); err != nil {
		return nil, err
	}
	v.removeStaleSnapshots()
	if err := v.adopt(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// Close lets go of every guest without stopping any: QMP and control
// connections are closed (QEMU serves one client at a time, so another VMM
// can adopt them) and the guests run on. The guests' parent cgroup goes
// when no guest is left in it, so that a host (or a test) that ran its
// last guest keeps no empty cgroup behind.
func (v *VMM) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for app, g := range v.guests {
		g.close()
		delete(v.guests, app)
	}
	if v.cgroups.Mount == "" {
		return nil
	}
	return v.cgroups.RemoveParent()
}

// Version names QEMU and, once chosen, the accelerator.
func (v *VMM) Version() string {
	if a := v.accel.Load(); a != nil {
		return "qemu-" + v.version + "/" + *a
	}
	return "qemu-" + v.version
}

// Accel returns the accelerator guests run under, probing on first use.
func (v *VMM) Accel(ctx context.Context) string {
	v.accelOnce.Do(func() {
		if v.accel.Load() == nil {
			a := chooseAccel(ctx, v.cfg.QEMU, v.cfg.Image, v.bootID, v.cfg.RuntimeDir, filepath.Join(v.cfg.RuntimeDir, "accel.json"))
			v.accel.Store(&a)
		}
	})
	return *v.accel.Load()
}

func (v *VMM) appDir(app string) string  { return filepath.Join(v.cfg.RuntimeDir, app) }
func (v *VMM) pidfile(app string) string { return filepath.Join(v.cfg.RuntimeDir, app+".pid") }
func (v *VMM) snapDir(app string) string { return filepath.Join(v.cfg.SnapshotDir, app) }

// record is what this VMM keeps beside a pidfile that vmm.Pidfile does not
// hold: what the guest booted from, so Sleep can stamp it after a restart.
type record struct {
	GuestImage string   `json:"guestImage"`
	Accel      string   `json:"accel"`
	Machine    string   `json:"machine"`
	MemoryMiB  int      `json:"memoryMiB"`
	Restored   bool     `json:"restored"`
	Cmdline    []string `json:"cmdline"`
	// Volume and MemoryLimit are the jail's: the file given to the
	// guest's uid, and its cgroup's memory limit in bytes.
	Volume      string `json:"volume"`
	MemoryLimit int64  `json:"memoryLimit"`
	// Stamp is what a snapshot of the guest is stamped with (bar its
	// size and time): what it booted under, kept for a sleep after a
	// daemon restart or upgrade.
	Stamp Stamp `json:"stamp"`
}

// vmGuest is one QEMU process.
type vmGuest struct {
	pf   vmm.Pidfile
	rec  record
	done chan struct{} // closed when the process is gone
	qmp  *qmp
	ctl  *control
	log  tenantLog

	mu       sync.Mutex
	exitCode *int
	message  string
	closed   bool // close was called: no new QMP connection is kept
	// holderKey is the pidfile under which g holds the guest's
	// connections in this process (see supersede).
	holderKey string
	// freezeHeld is set while a freeze of the volume this process asked
	// for (a checkpoint's or a sleep's) has not been thawed (freeze.go).
	freezeHeld atomic.Bool
}

// errNoQMP says the guest's QMP connection is not (yet) established.
var errNoQMP = errors.New("QEMU's monitor is not connected yet (another process may hold it)")

// monitor returns g's QMP client.
func (g *vmGuest) monitor() (*qmp, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.qmp == nil {
		return nil, errNoQMP
	}
	return g.qmp, nil
}

func (g *vmGuest) alive() bool {
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

func (g *vmGuest) status() vmm.Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := vmm.Status{
		AppID: g.pf.AppID, DeploymentID: g.pf.DeploymentID, Slot: g.pf.Slot, PID: g.pf.PID,
		BootID: g.pf.BootID, StartedAt: g.pf.StartedAt, Endpoint: g.pf.Endpoint, Restored: g.rec.Restored,
		State: vmm.Running,
	}
	if !g.alive() {
		s.State = vmm.Exited
		s.ExitCode = g.exitCode
		s.Message = g.message
	}
	return s
}

// onMessage records exit codes and setup failures, then passes m on.
func (v *VMM) onMessage(g *vmGuest) func(guest.Message) {
	return func(m guest.Message) {
		g.mu.Lock()
		switch m.Kind {
		case guest.KindExited, guest.KindGaveUp:
			if m.ExitCode != nil {
				c := *m.ExitCode
				g.exitCode = &c
			}
			if m.Error != "" {
				g.message = m.Error
			}
		case guest.KindFailed:
			g.message = m.Error
		}
		g.mu.Unlock()
		if m.Kind == guest.KindLog {
			g.log.write(m.Stream, m.Data)
		}
		if v.cfg.OnMessage != nil {
			v.cfg.OnMessage(g.pf.AppID, m)
		}
	}
}

// List returns every guest known, live or exited, sorted by app.
func (v *VMM) List(ctx context.Context) ([]vmm.Status, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]vmm.Status, 0, len(v.guests))
	for _, g := range v.guests {
		out = append(out, g.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AppID < out[j].AppID })
	return out, nil
}

// Start boots spec's guest cold. Any snapshot of the app is discarded
// first: once a cold guest writes to the volume, restoring older memory over
// it would corrupt the filesystem.
func (v *VMM) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	if err := v.claim(spec.AppID); err != nil {
		return vmm.Status{}, err
	}
	if err := v.Discard(ctx, spec.AppID); err != nil {
		return vmm.Status{}, err
	}
	g, err := v.launch(ctx, spec, "")
	if err != nil {
		v.release(spec.AppID)
		return vmm.Status{}, err
	}
	v.mu.Lock()
	v.guests[spec.AppID] = g
	v.mu.Unlock()
	return g.status(), nil
}

// claim refuses an app with a live guest and forgets an exited one.
func (v *VMM) claim(app string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if g := v.guests[app]; g != nil {
		if g.alive() {
			return fmt.Errorf("start %s: its guest is already running (pid %d)", app, g.pf.PID)
		}
		g.close()
		delete(v.guests, app)
	}
	return nil
}

func (v *VMM) release(app string) { _ = os.Remove(v.pidfile(app)) }

// forget lets go of a guest whose QEMU has ended (stopped or slept): its
// connections, its place in the map (unless a newer guest took it) and
// its pidfile.
func (v *VMM) forget(appID string, g *vmGuest) {
	g.close()
	v.mu.Lock()
	if v.guests[appID] == g {
		delete(v.guests, appID)
	}
	v.mu.Unlock()
	v.release(appID)
}

func (g *vmGuest) close() {
	g.log.close()
	g.mu.Lock()
	g.closed = true
	q, key := g.qmp, g.holderKey
	g.mu.Unlock()
	if key != "" {
		holders.CompareAndDelete(key, g)
	}
	if q != nil {
		q.close()
	}
	if g.ctl != nil {
		g.ctl.close()
	}
}

// Stop asks the guest to shut down, then sends SIGTERM, then SIGKILL.
func (v *VMM) Stop(ctx context.Context, appID string) error {
	v.mu.Lock()
	g := v.guests[appID]
	v.mu.Unlock()
	if g == nil {
		v.release(appID)
		return nil
	}
	if g.alive() {
		graceful := 15 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			graceful = time.Until(dl) * 2 / 3
		}
		rctx, cancel := context.WithTimeout(ctx, min(graceful, 2*time.Second))
		_, err := g.ctl.request(rctx, guest.Message{Kind: guest.KindShutdown})
		cancel()
		if err == nil {
			waitDone(g.done, graceful)
		}
		if g.alive() {
			_ = v.signal(g, syscall.SIGTERM)
			waitDone(g.done, 3*time.Second)
		}
		if g.alive() {
			_ = v.signal(g, syscall.SIGKILL)
			if !waitDone(g.done, 5*time.Second) {
				return fmt.Errorf("stop %s: QEMU (pid %d) survived SIGKILL", appID, g.pf.PID)
			}
		}
	}
	v.forget(appID, g)
	return nil
}

// signal sends sig to g's QEMU, after checking its PID is still that QEMU.
func (v *VMM) signal(g *vmGuest, sig syscall.Signal) error {
	if !g.pf.Alive(v.bootID) {
		return nil
	}
	return syscall.Kill(g.pf.PID, sig)
}

func waitDone(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Measure asks the guest for its resource use.
func (v *VMM) Measure(ctx context.Context, appID string) (vmm.Measurement, error) {
	g, err := v.live(appID)
	if err != nil {
		return vmm.Measurement{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := g.ctl.request(rctx, guest.Message{Kind: guest.KindMeasure})
	if err != nil {
		return vmm.Measurement{}, fmt.Errorf("measure %s: %w", appID, err)
	}
	if r.Measurement == nil {
		return vmm.Measurement{}, fmt.Errorf("measure %s: the guest sent no measurement", appID)
	}
	ms := r.Measurement
	// Zero when it cannot be read: the daemon then counts the given memory.
	host, _ := readHostShare(g.pf.PID, uint64(max(g.rec.MemoryMiB, 0))<<20)
	return vmm.Measurement{
		HostMemoryBytes: host.PSS, TCGCacheBytes: host.TCG,
		MemoryTotalBytes: ms.MemoryTotalBytes,
		MemoryUsedBytes:  ms.MemoryTotalBytes - min(ms.MemoryAvailableBytes, ms.MemoryTotalBytes),
		CPUTime:          time.Duration(ms.CPUTimeMs) * time.Millisecond,
		RxBytes:          ms.RxBytes, TxBytes: ms.TxBytes, MeasuredAt: time.Now().UTC(),
	}, nil
}

// Request sends one control request (freeze, thaw, ping…) to the guest and
// returns its reply. (ours: for checkpoints, which freeze the volume)
func (v *VMM) Request(ctx context.Context, appID string, kind guest.Kind) (guest.Message, error) {
	g, err := v.live(appID)
	if err != nil {
		return guest.Message{}, err
	}
	return g.ctl.request(ctx, guest.Message{Kind: kind})
}

func (v *VMM) live(appID string) (*vmGuest, error) {
	v.mu.Lock()
	g := v.guests[appID]
	v.mu.Unlock()
	if g == nil {
		return nil, fmt.Errorf("%s: %w", appID, vmm.ErrNotFound)
	}
	if !g.alive() {
		return nil, fmt.Errorf("%s: its guest has exited", appID)
	}
	return g, nil
}

// TenantLogPath is the file holding the tenant's output as received over
// the control channel (rotated at 8 MiB to TenantLogPath+".1").
func (v *VMM) TenantLogPath(appID string) string {
	return filepath.Join(v.appDir(appID), tenantLogFile)
}

// ConsolePath is the file holding the app's serial console since its last
// start (rotated at 8 MiB to ConsolePath+".1"; see console.go).
func (v *VMM) ConsolePath(appID string) string {
	return filepath.Join(v.appDir(appID), consoleFile)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
