package qemu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/vmm"
)

// machineFor resolves spec's drives into a machine description.
func (v *VMM) machineFor(ctx context.Context, spec vmm.Spec) (machine, error) {
	m := machine{
		QEMU: v.cfg.QEMU, Accel: v.Accel(ctx), Kernel: v.cfg.Image.Kernel, Initrd: v.cfg.Image.Initrd,
		Base: v.cfg.Image.Base, Volume: spec.VolumePath, Dir: v.vmDir(spec.AppID),
		Config: filepath.Join(v.appDir(spec.AppID), configDrive), Spec: spec, UserNet: v.cfg.UserNetwork,
	}
	if spec.Network.Tap != "" {
		// The jail hands QEMU its tap open, first of the files.
		m.TapFD = 3
	}
	if len(m.Dir)+1+len(controlSocket) > 107 {
		return m, fmt.Errorf("the runtime folder %s is too long for QEMU's unix sockets (107 bytes with %s/%s)", v.cfg.RuntimeDir, spec.AppID, controlSocket)
	}
	if spec.VolumePath == "" {
		return m, fmt.Errorf("start %s: no volume", spec.AppID)
	}
	var err error
	if m.Volume, err = filepath.Abs(spec.VolumePath); err != nil {
		return m, err
	}
	for i, l := range spec.Layers {
		if l.Kind != vmm.LayerFilesystem {
			// The daemon's layer cache packs an executable into an image
			// before a start (layer.Cache), so a VMM attaches images only.
			return m, fmt.Errorf("start %s: layer %d is %s, not an image; the layer cache packs executables before a start", spec.AppID, i, l.Kind)
		}
		p, err := filepath.Abs(l.Path)
		if err != nil {
			return m, err
		}
		m.Layers = append(m.Layers, p)
	}
	return m, nil
}

// stampOf is the stamp a snapshot of machine m's guest gets, bar the
// state's size and when it was saved.
func (v *VMM) stampOf(m machine) Stamp {
	mem := m.Spec.MemoryMiB
	if mem <= 0 {
		mem = 256 // args' default
	}
	return Stamp{
		Format: stampFormat, AppID: m.Spec.AppID, DeploymentID: m.Spec.DeploymentID, GuestImage: v.cfg.Image.Version,
		QEMU: v.version, MachineType: m.machineType(), GuestKernel: v.cfg.Image.KernelRelease, MemoryMiB: mem,
		Machine: m.Hash(), Network: m.guestNetwork(), BootID: v.bootID,
	}
}

// launch starts QEMU for spec in its jail (restoring from the state file
// incoming when set), writes the pidfile and connects QMP and the control
// channel.
func (v *VMM) launch(ctx context.Context, spec vmm.Spec, incoming string) (*vmGuest, error) {
	m, err := v.machineFor(ctx, spec)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{v.appDir(spec.AppID), m.Dir} {
		if err := os.MkdirAll(d, perm.Dir); err != nil {
			return nil, fmt.Errorf("make runtime folder of %s: %w", spec.AppID, err)
		}
	}
	// The sockets are new at each start, made by QEMU as the guest's uid
	// (the last one's were given back to root); a console in vm/ is an
	// older release's.
	for _, s := range []string{qmpSocket, controlSocket, consoleFile} {
		_ = os.Remove(filepath.Join(m.Dir, s))
	}
	drive, err := guest.EncodeDrive(guestConfig(spec))
	if err != nil {
		return nil, fmt.Errorf("config drive of %s: %w", spec.AppID, err)
	}
	if err := atomicfile.WriteFile(m.Config, drive, perm.Secret); err != nil {
		return nil, fmt.Errorf("write config drive of %s: %w", spec.AppID, err)
	}
	// What QEMU could not open as the guest's uid, it is handed open.
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if spec.Network.Tap != "" {
		f, err := openTap(spec.Network.Tap)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", spec.AppID, err)
		}
		files = append(files, f)
	}
	console, err := openConsole(v.ConsolePath(spec.AppID))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.AppID, err)
	}
	files = append(files, console)
	args := append(m.args(time.Now().Unix()), addFdArgs(len(files)-1)...)
	if incoming != "" {
		// spawn=deny rules out exec: URIs; the state is read from a file
		// root opened.
		f, err := os.Open(incoming)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", spec.AppID, err)
		}
		files = append(files, f)
		args = append(args, "-incoming", "fd:"+fdArg(len(files)-1))
	}
	if !v.unjailed {
		args = append(args, "-sandbox", sandboxArg)
	}
	rec := record{
		GuestImage: v.cfg.Image.Version, Accel: m.Accel, Machine: m.Hash(), MemoryMiB: spec.MemoryMiB, Restored: incoming != "",
		Cmdline: args, Volume: m.Volume, MemoryLimit: guestLimits(m).MemoryMax, Stamp: v.stampOf(m),
	}
	if v.unjailed {
		rec.MemoryLimit = 0 // no cgroup to raise at a sleep
	}
	logf, err := os.OpenFile(filepath.Join(v.appDir(spec.AppID), qemuLogFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open QEMU's log for %s: %w", spec.AppID, err)
	}
	defer logf.Close()
	cmd, err := v.command(m, args, incoming != "", len(files))
	if err != nil {
		v.unjail(spec.AppID, rec, 0)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = logf, logf, files
	// A daemon killed from here to the pidfile leaves a QEMU that no
	// pidfile names; the marker tells the next one to look for it.
	marker := filepath.Join(v.appDir(spec.AppID), launchingFile)
	if err := atomicfile.WriteFile(marker, nil, 0o640); err != nil {
		v.unjail(spec.AppID, rec, 0)
		return nil, fmt.Errorf("mark the launch of %s: %w", spec.AppID, err)
	}
	if err := cmd.Start(); err != nil {
		v.unjail(spec.AppID, rec, 0)
		_ = os.Remove(marker)
		return nil, fmt.Errorf("start QEMU for %s: %w", spec.AppID, err)
	}
	ticks, _ := vmm.StartTicks(cmd.Process.Pid)
	g := &vmGuest{
		pf: vmm.Pidfile{
			AppID: spec.AppID, DeploymentID: spec.DeploymentID, Slot: spec.Slot, PID: cmd.Process.Pid,
			BootID: v.bootID, StartTicks: ticks, StartedAt: time.Now().UTC(), Endpoint: m.endpoint(),
		},
		rec:  rec,
		done: make(chan struct{}),
		log:  tenantLog{path: filepath.Join(v.appDir(spec.AppID), tenantLogFile)},
	}
	go func() {
		_ = cmd.Wait()
		v.ended(g)
	}()
	go keepConsole(v.ConsolePath(spec.AppID), g.done)
	fail := func(err error) (*vmGuest, error) {
		_ = cmd.Process.Kill()
		<-g.done
		g.close()
		_ = os.Remove(marker)
		b, _ := os.ReadFile(filepath.Join(v.appDir(spec.AppID), qemuLogFile))
		if s := strings.TrimSpace(string(b)); s != "" {
			err = fmt.Errorf("%w (QEMU said: %s)", err, lastLine(s))
		}
		return nil, err
	}
	if err := v.writeRecord(spec.AppID, g.rec); err != nil {
		return fail(err)
	}
	supersede(v.pidfile(spec.AppID), g)
	if err := vmm.WritePidfile(v.pidfile(spec.AppID), g.pf); err != nil {
		return fail(fmt.Errorf("write pidfile of %s: %w", spec.AppID, err))
	}
	_ = os.Remove(marker)
	if err := v.connect(ctx, g); err != nil {
		return fail(err)
	}
	return g, nil
}

// command is the jailed QEMU of m with args, handed files open from fd 3
// on.
func (v *VMM) command(m machine, args []string, restoring bool, handed int) (*exec.Cmd, error) {
	if v.unjailed {
		// The benchmark's peer: the launch of the builds before the jail.
		cmd := exec.Command(v.cfg.QEMU, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd, nil
	}
	j, err := v.prepareJail(m, restoring)
	if err != nil {
		return nil, err
	}
	j.plan.Args, j.plan.Handed = args, handed
	return jail.Command(j.plan, j.net)
}

// ended follows the end of g's QEMU: its jail is taken down, a kill at
// its memory limit becomes its message, and done is closed.
func (v *VMM) ended(g *vmGuest) {
	if msg := v.unjail(g.pf.AppID, g.rec, g.pf.PID); msg != "" {
		g.mu.Lock()
		g.message = msg
		g.mu.Unlock()
	}
	close(g.done)
}

// connect attaches QMP and the control channel to g's sockets.
func (v *VMM) connect(ctx context.Context, g *vmGuest) error {
	dir := v.vmDir(g.pf.AppID)
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q, err := dialQMP(qctx, filepath.Join(dir, qmpSocket))
	if err != nil {
		return fmt.Errorf("guest %s: %w", g.pf.AppID, err)
	}
	g.mu.Lock()
	g.qmp = q
	g.mu.Unlock()
	g.ctl = newControl(filepath.Join(dir, controlSocket), v.onMessage(g))
	go g.ctl.run()
	return nil
}

// readRecord reads the app's record; a missing or unreadable one is the
// zero record.
func (v *VMM) readRecord(app string) record {
	var r record
	if b, err := os.ReadFile(filepath.Join(v.appDir(app), recordFile)); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	return r
}

func (v *VMM) writeRecord(app string, r record) error {
	b, _ := json.Marshal(r)
	return atomicfile.WriteFile(filepath.Join(v.appDir(app), recordFile), b, 0o640)
}
