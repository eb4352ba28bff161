// Package fake is a VMM for tests: each "guest" is a real local process
// serving HTTP on a loopback port, started in its own session with a
// pidfile, so the converge loop, health checks, restarts, sleep/wake and
// adoption after a daemon restart are all exercised end to end without
// QEMU.
//
// A guest is the current executable run again with NIBRUN_FAKE_GUEST=1: a
// test binary's TestMain calls RunGuestIfAsked first thing. The tenant
// environment of the spec steers the guest, so a test writes its scenario
// into desired.json like a tenant would:
//
//	FAKE_BOOT_DELAY_MS   boot this long: connections are accepted and
//	                     closed at once until then (a slow boot)
//	FAKE_EXIT_AFTER_MS   exit after this long (a crash)
//	FAKE_EXIT_CODE       with that exit code (default 1)
//	FAKE_HEALTH_STATUS   answer every request with this HTTP status
//
// and SetHealth changes the answer of a running guest. The guest's listener
// is opened by the VMM and handed to the process, so Endpoint is known at
// Start and never collides with another test's port.
package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/vmm"
)

// Version is what reported.json shows as versions.vmm.
const Version = "fake"

// Options configure a fake VMM.
type Options struct {
	// RuntimeDir holds pidfiles, exit files, logs and health overrides.
	RuntimeDir string
	// SnapshotDir holds one folder per sleeping app.
	SnapshotDir string
	// Command runs a guest; empty means the current executable.
	Command []string
	// InProcess serves every guest from a goroutine of this process
	// instead of a child process. Benchmarks use it to carry a thousand
	// guests; nothing is adoptable across a restart in this mode.
	InProcess bool
}

// VMM is the fake. It is safe for concurrent use.
type VMM struct {
	opts   Options
	bootID string

	mu     sync.Mutex
	guests map[string]*guest

	frz freezes // freeze.go
}

type guest struct {
	status  vmm.Status
	memory  uint64
	adopted bool          // not our child: liveness is polled
	done    chan struct{} // closed when our child exited
	srv     *http.Server  // in-process guests
	spec    vmm.Spec
}

// New returns a fake VMM, adopting every guest whose pidfile in
// RuntimeDir names a live process of this boot.
func New(opts Options) (*VMM, error) {
	for _, d := range []string{opts.RuntimeDir, opts.SnapshotDir} {
		if err := os.MkdirAll(d, perm.Dir); err != nil {
			return nil, fmt.Errorf("fake vmm: %w", err)
		}
	}
	if len(opts.Command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("fake vmm: find this executable: %w", err)
		}
		opts.Command = []string{exe}
	}
	boot, err := vmm.BootID()
	if err != nil {
		return nil, err
	}
	v := &VMM{opts: opts, bootID: boot, guests: map[string]*guest{}}
	pids, err := vmm.ReadPidfiles(opts.RuntimeDir)
	if err != nil {
		return nil, fmt.Errorf("fake vmm: read pidfiles: %w", err)
	}
	for _, p := range pids {
		if p.BootID != boot {
			// The host rebooted: that guest is gone with its boot, and
			// was not the app's failure, so it is not listed at all.
			os.Remove(v.pidfile(p.AppID))
			os.Remove(v.exitfile(p.AppID))
			continue
		}
		g := &guest{adopted: true, status: vmm.Status{
			AppID: p.AppID, DeploymentID: p.DeploymentID, Slot: p.Slot, PID: p.PID, BootID: p.BootID,
			StartedAt: p.StartedAt, Endpoint: p.Endpoint, State: vmm.Running,
		}}
		if !p.Alive(boot) {
			g.status.State = vmm.Exited
			g.status.ExitCode = v.readExit(p.AppID)
		}
		v.guests[p.AppID] = g
	}
	v.killOrphans()
	return v, nil
}

// killOrphans ends the guests of launches that a killed daemon left
// before their pidfile (a launching marker names the app), as the QEMU
// VMM does: no guest may run that no pidfile names, or the next start
// runs a second one for the app.
func (v *VMM) killOrphans() {
	markers, _ := filepath.Glob(filepath.Join(v.opts.RuntimeDir, "*"+launchingSuffix))
	if len(markers) == 0 {
		return
	}
	procs := Processes(v.opts.RuntimeDir)
	for _, mk := range markers {
		app := strings.TrimSuffix(filepath.Base(mk), launchingSuffix)
		named := 0
		if g := v.guests[app]; g != nil && g.status.State == vmm.Running {
			named = g.status.PID
		}
		for pid, a := range procs {
			if a == app && pid != named {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = os.Remove(mk)
	}
}

// launchingSuffix names the marker of a launch whose pidfile is not
// written yet: RuntimeDir/APP.launching.
const launchingSuffix = ".launching"

// Processes finds every fake guest process of runtimeDir, by the
// environment the VMM gave it, whether or not a pidfile names it: pid →
// app.
func Processes(runtimeDir string) map[int]string {
	out := map[int]string{}
	prefix := "NIBRUN_FAKE_EXIT_FILE=" + filepath.Clean(runtimeDir) + string(filepath.Separator)
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			rest, ok := strings.CutPrefix(kv, prefix)
			if !ok || strings.Contains(rest, string(filepath.Separator)) {
				continue
			}
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(e))); err == nil {
				out[pid] = strings.TrimSuffix(rest, ".exit")
			}
			break
		}
	}
	return out
}

func (v *VMM) pidfile(app string) string  { return filepath.Join(v.opts.RuntimeDir, app+".pid") }
func (v *VMM) exitfile(app string) string { return filepath.Join(v.opts.RuntimeDir, app+".exit") }
func (v *VMM) markerfile(app string) string {
	return filepath.Join(v.opts.RuntimeDir, app+launchingSuffix)
}
func (v *VMM) healthfile(app string) string {
	return filepath.Join(v.opts.RuntimeDir, app+".health")
}

func (v *VMM) readExit(app string) *int {
	b, err := os.ReadFile(v.exitfile(app))
	if err != nil {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	return &n
}

// Version implements vmm.VMM.
func (v *VMM) Version() string { return Version }

// TenantLogPath is the file a guest's stdout and stderr are appended to.
func (v *VMM) TenantLogPath(appID string) string {
	return filepath.Join(v.opts.RuntimeDir, appID+".log")
}

// Start implements vmm.VMM.
func (v *VMM) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	v.mu.Lock()
	if g, ok := v.guests[spec.AppID]; ok && g.status.State == vmm.Running {
		v.mu.Unlock()
		return vmm.Status{}, fmt.Errorf("start %s: a guest is already running (pid %d)", spec.AppID, g.status.PID)
	}
	delete(v.guests, spec.AppID)
	v.mu.Unlock()
	os.Remove(v.exitfile(spec.AppID))
	os.Remove(v.healthfile(spec.AppID))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return vmm.Status{}, fmt.Errorf("start %s: listen: %w", spec.AppID, err)
	}
	g := &guest{spec: spec, memory: uint64(spec.MemoryMiB) << 20}
	g.status = vmm.Status{
		AppID: spec.AppID, DeploymentID: spec.DeploymentID, Slot: spec.Slot, State: vmm.Running,
		BootID: v.bootID, StartedAt: time.Now().UTC(), Endpoint: ln.Addr().String(),
	}
	if v.opts.InProcess {
		g.status.PID = os.Getpid()
		g.srv = &http.Server{Handler: handler(spec.AppID, spec.DeploymentID, spec.Command.Environment, v.healthfile(spec.AppID)), ReadHeaderTimeout: 5 * time.Second}
		go g.srv.Serve(ln)
	} else {
		if err := v.spawn(spec, ln, g); err != nil {
			return vmm.Status{}, err
		}
	}
	v.mu.Lock()
	v.guests[spec.AppID] = g
	st := g.status
	v.mu.Unlock()
	return st, nil
}

func (v *VMM) spawn(spec vmm.Spec, ln net.Listener, g *guest) error {
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("start %s: %w", spec.AppID, err)
	}
	defer f.Close()
	logf, err := os.OpenFile(v.TenantLogPath(spec.AppID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("start %s: %w", spec.AppID, err)
	}
	defer logf.Close()
	// Not CommandContext: the guest must outlive the call (and the daemon).
	cmd := exec.Command(v.opts.Command[0], v.opts.Command[1:]...)
	// Only the guest's own environment: the daemon's (its AWS keys, its
	// tokens) is never a tenant's, as nothing of the host's reaches a
	// microVM. The NIBRUN_FAKE_ variables are the fake's own wiring.
	env := append([]string(nil),
		"NIBRUN_FAKE_GUEST=1",
		"NIBRUN_FAKE_APP="+spec.AppID,
		"NIBRUN_FAKE_DEPLOYMENT="+spec.DeploymentID,
		"NIBRUN_FAKE_EXIT_FILE="+v.exitfile(spec.AppID),
		"NIBRUN_FAKE_HEALTH_FILE="+v.healthfile(spec.AppID),
	)
	for k, val := range spec.Command.Environment {
		env = append(env, k+"="+val)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{f}
	// Its own session: the guest outlives the daemon, as a microVM does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// A daemon killed from here to the pidfile leaves a guest no pidfile
	// names; the marker tells the next one to look for it (killOrphans).
	if err := atomicfile.WriteFile(v.markerfile(spec.AppID), nil, 0o640); err != nil {
		return fmt.Errorf("start %s: mark the launch: %w", spec.AppID, err)
	}
	if err := cmd.Start(); err != nil {
		_ = os.Remove(v.markerfile(spec.AppID))
		return fmt.Errorf("start %s: %w", spec.AppID, err)
	}
	g.status.PID = cmd.Process.Pid
	ticks, _ := vmm.StartTicks(cmd.Process.Pid)
	g.done = make(chan struct{})
	if err := vmm.WritePidfile(v.pidfile(spec.AppID), vmm.Pidfile{
		AppID: spec.AppID, DeploymentID: spec.DeploymentID, Slot: spec.Slot, PID: cmd.Process.Pid,
		BootID: v.bootID, StartTicks: ticks, StartedAt: g.status.StartedAt, Endpoint: g.status.Endpoint,
	}); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		_ = os.Remove(v.markerfile(spec.AppID))
		return fmt.Errorf("start %s: %w", spec.AppID, err)
	}
	_ = os.Remove(v.markerfile(spec.AppID))
	go func() {
		err := cmd.Wait()
		code := exitCode(cmd.ProcessState, err)
		v.mu.Lock()
		g.status.State = vmm.Exited
		g.status.ExitCode = &code
		v.mu.Unlock()
		close(g.done)
	}()
	return nil
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// List implements vmm.VMM. Adopted guests are checked against /proc on
// every call; the VMM's own children report their exit through Wait.
func (v *VMM) List(ctx context.Context) ([]vmm.Status, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]vmm.Status, 0, len(v.guests))
	for app, g := range v.guests {
		if g.adopted && g.status.State == vmm.Running {
			p := vmm.Pidfile{PID: g.status.PID, BootID: g.status.BootID}
			if pf, err := vmm.ReadPidfile(v.pidfile(app)); err == nil {
				p = pf
			}
			if !p.Alive(v.bootID) {
				g.status.State = vmm.Exited
				g.status.ExitCode = v.readExit(app)
			}
		}
		out = append(out, g.status)
	}
	return out, nil
}

// Stop implements vmm.VMM: SIGTERM, then SIGKILL when ctx is about to end
// (or after 5 s).
func (v *VMM) Stop(ctx context.Context, app string) error {
	v.mu.Lock()
	g, ok := v.guests[app]
	delete(v.guests, app)
	var st vmm.Status
	if ok {
		st = g.status
	}
	v.mu.Unlock()
	if ok {
		if err := v.terminate(ctx, g, st); err != nil {
			return fmt.Errorf("stop %s: %w", app, err)
		}
	}
	for _, f := range []string{v.pidfile(app), v.exitfile(app), v.healthfile(app)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("stop %s: %w", app, err)
		}
	}
	return nil
}

func (v *VMM) terminate(ctx context.Context, g *guest, st vmm.Status) error {
	if g.srv != nil {
		return g.srv.Close()
	}
	if st.State != vmm.Running {
		return nil
	}
	grace := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		grace = time.Until(dl) / 2
	}
	pid := st.PID
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if g.waitGone(pid, v.bootID, grace) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if g.waitGone(pid, v.bootID, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("pid %d did not end after SIGKILL", pid)
}

func (g *guest) waitGone(pid int, boot string, d time.Duration) bool {
	if g.done != nil {
		select {
		case <-g.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err != nil {
			return true
		}
		if _, err := vmm.StartTicks(pid); err != nil { // a zombie is gone
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

type stamp struct {
	DeploymentID string `json:"deploymentId"`
	GuestImage   string `json:"guestImage"`
	BootID       string `json:"bootId"`
	Slot         int    `json:"slot"`
}

func (v *VMM) stampPath(app string) string {
	return filepath.Join(v.opts.SnapshotDir, app, "stamp.json")
}

// Sleep implements vmm.VMM: the fake saves only the stamp, then ends the
// guest.
func (v *VMM) Sleep(ctx context.Context, app string) error {
	_, st, ok := v.running(app)
	if !ok {
		return fmt.Errorf("sleep %s: %w", app, vmm.ErrNotFound)
	}
	if err := os.MkdirAll(filepath.Dir(v.stampPath(app)), perm.Dir); err != nil {
		return fmt.Errorf("sleep %s: %w", app, err)
	}
	b, _ := json.Marshal(stamp{DeploymentID: st.DeploymentID, GuestImage: Version, BootID: v.bootID, Slot: st.Slot})
	if err := atomicfile.WriteFile(v.stampPath(app), b, 0o640); err != nil {
		return fmt.Errorf("sleep %s: %w", app, err)
	}
	return v.Stop(ctx, app)
}

// Wake implements vmm.VMM.
func (v *VMM) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	restored := false
	if b, err := os.ReadFile(v.stampPath(spec.AppID)); err == nil {
		var s stamp
		if json.Unmarshal(b, &s) == nil && s == (stamp{DeploymentID: spec.DeploymentID, GuestImage: Version, BootID: v.bootID, Slot: spec.Slot}) {
			restored = true
		}
	}
	if err := v.Discard(ctx, spec.AppID); err != nil {
		return vmm.Status{}, err
	}
	st, err := v.Start(ctx, spec)
	if err != nil {
		return st, err
	}
	st.Restored = restored
	return st, nil
}

// Discard implements vmm.VMM.
func (v *VMM) Discard(ctx context.Context, app string) error {
	if err := os.RemoveAll(filepath.Join(v.opts.SnapshotDir, app)); err != nil {
		return fmt.Errorf("discard the snapshot of %s: %w", app, err)
	}
	return nil
}

// Measure implements vmm.VMM from /proc.
func (v *VMM) Measure(ctx context.Context, app string) (vmm.Measurement, error) {
	g, st, ok := v.running(app)
	if !ok {
		return vmm.Measurement{}, fmt.Errorf("measure %s: %w", app, vmm.ErrNotFound)
	}
	m := vmm.Measurement{MemoryTotalBytes: g.memory, MeasuredAt: time.Now().UTC()}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				m.MemoryUsedBytes = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 12 {
				ut, _ := strconv.ParseUint(f[11], 10, 64)
				stt, _ := strconv.ParseUint(f[12], 10, 64)
				m.CPUTime = time.Duration(ut+stt) * 10 * time.Millisecond // USER_HZ = 100
			}
		}
	}
	return m, nil
}

// running returns app's guest and a copy of its status, taken under the
// lock, when it is running. A guest's memory and srv are set once, before
// it is in the map, so reading them afterwards needs no lock.
func (v *VMM) running(app string) (*guest, vmm.Status, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	g, ok := v.guests[app]
	if !ok || g.status.State != vmm.Running {
		return nil, vmm.Status{}, false
	}
	return g, g.status, true
}

// Crash kills app's guest with sig, the way a guest kernel panic or an
// OOM kill ends a microVM.
func (v *VMM) Crash(app string, sig syscall.Signal) error {
	g, st, ok := v.running(app)
	if !ok || g.srv != nil {
		return fmt.Errorf("crash %s: %w", app, vmm.ErrNotFound)
	}
	return syscall.Kill(st.PID, sig)
}

// SetHealth makes app's running guest answer every request with status
// (0 restores the default).
func (v *VMM) SetHealth(app string, status int) error {
	if status == 0 {
		err := os.Remove(v.healthfile(app))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return atomicfile.WriteFile(v.healthfile(app), []byte(strconv.Itoa(status)), 0o640)
}

// KillAll ends every guest of runtimeDir, named by a pidfile or not, for
// test cleanup: guests outlive whoever started them, by design. The
// cgroups a jailed VMM (nibrunner/vmm/qemu) made for them go too: a VMM's
// Close leaves its guests' parent cgroup while they run, and nothing else
// would remove it once they are killed.
func KillAll(runtimeDir string) {
	pids, _ := vmm.ReadPidfiles(runtimeDir)
	boot, _ := vmm.BootID()
	for _, p := range pids {
		if p.Alive(boot) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	for pid := range Processes(runtimeDir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	removeCgroups(runtimeDir)
}

// removeCgroups removes the guests' cgroups of a VMM on runtimeDir and
// their parent, where they exist (cgroups named by the host configuration
// are the host's to keep).
func removeCgroups(runtimeDir string) {
	abs, err := filepath.Abs(runtimeDir)
	if err != nil {
		return
	}
	c, err := jail.Detect(jail.DefaultMount, jail.ParentFor(abs))
	if err != nil {
		return
	}
	for _, name := range c.Names() {
		_ = c.RemoveReaped(name)
	}
	_ = c.RemoveParent()
}

// RunGuestIfAsked runs this process as a fake guest when the fake VMM
// started it, and never returns then. Call it first thing in TestMain (or
// main) of any binary the fake VMM runs.
func RunGuestIfAsked() {
	if os.Getenv("NIBRUN_FAKE_GUEST") != "1" {
		return
	}
	os.Exit(guestMain())
}

func guestMain() int {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, val, ok := strings.Cut(kv, "="); ok {
			env[k] = val
		}
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake guest: listener:", err)
		return 2
	}
	exitFile := env["NIBRUN_FAKE_EXIT_FILE"]
	if ms, err := strconv.Atoi(env["FAKE_EXIT_AFTER_MS"]); err == nil {
		code := 1
		if c, err := strconv.Atoi(env["FAKE_EXIT_CODE"]); err == nil {
			code = c
		}
		time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			_ = os.WriteFile(exitFile, []byte(strconv.Itoa(code)), 0o640)
			os.Exit(code)
		})
	}
	if ms, err := strconv.Atoi(env["FAKE_BOOT_DELAY_MS"]); err == nil {
		booting(ln, time.Now().Add(time.Duration(ms)*time.Millisecond))
	}
	// Its first line of output, as a tenant's would be.
	fmt.Printf("fake guest %s (%s) listening on %s\n", env["NIBRUN_FAKE_APP"], env["NIBRUN_FAKE_DEPLOYMENT"], ln.Addr())
	srv := &http.Server{Handler: handler(env["NIBRUN_FAKE_APP"], env["NIBRUN_FAKE_DEPLOYMENT"], env, env["NIBRUN_FAKE_HEALTH_FILE"]), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signalNotify(sig)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "fake guest:", err)
		return 1
	}
	return 0
}

// booting plays a guest that has not booted until until: a connection is
// accepted and closed at once, as QEMU's user-network forward does while
// nothing in the guest listens, so a caller meets the failure a real
// booting guest gives rather than a listener that merely answers late.
func booting(ln net.Listener, until time.Time) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		time.Sleep(time.Until(until))
		return
	}
	_ = tl.SetDeadline(until)
	for {
		c, err := tl.Accept()
		if err != nil {
			if time.Now().Before(until) && !errors.Is(err, os.ErrDeadlineExceeded) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			break
		}
		c.Close()
	}
	_ = tl.SetDeadline(time.Time{})
}

// handler answers every request with the guest's health: the override
// file if present, else FAKE_HEALTH_STATUS, else 200.
func handler(app, deployment string, env map[string]string, healthFile string) http.Handler {
	fixed := http.StatusOK
	if s, err := strconv.Atoi(env["FAKE_HEALTH_STATUS"]); err == nil {
		fixed = s
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := fixed
		if b, err := os.ReadFile(healthFile); err == nil {
			if s, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				status = s
			}
		}
		w.WriteHeader(status)
		io.WriteString(w, app+" "+deployment+"\n")
	})
}
