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
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/vmm"
)

// machineFor resolves spec's drives into a machine description.
func (v *VMM) machineFor(ctx context.Context, spec vmm.Spec) (machine, error) {
	m := machine{
		QEMU: v.cfg.QEMU, Accel: v.Accel(ctx), Kernel: v.cfg.Image.Kernel, Initrd: v.cfg.Image.Initrd,
		Base: v.cfg.Image.Base, Volume: spec.VolumePath, Dir: v.appDir(spec.AppID),
		Config: filepath.Join(v.appDir(spec.AppID), configDrive), Spec: spec, UserNet: v.cfg.UserNetwork,
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

// launch starts QEMU for spec (restoring from incoming when set), writes
// the pidfile and connects QMP and the control channel.
func (v *VMM) launch(ctx context.Context, spec vmm.Spec, incoming string) (*vmGuest, error) {
	m, err := v.machineFor(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(m.Dir, perm.Dir); err != nil {
		return nil, fmt.Errorf("make runtime folder of %s: %w", spec.AppID, err)
	}
	for _, s := range []string{qmpSocket, controlSocket} {
		_ = os.Remove(filepath.Join(m.Dir, s))
	}
	drive, err := guest.EncodeDrive(guestConfig(spec))
	if err != nil {
		return nil, fmt.Errorf("config drive of %s: %w", spec.AppID, err)
	}
	if err := atomicfile.WriteFile(m.Config, drive, perm.Secret); err != nil {
		return nil, fmt.Errorf("write config drive of %s: %w", spec.AppID, err)
	}
	args := m.args(time.Now().Unix())
	if incoming != "" {
		args = append(args, "-incoming", "exec:cat "+shellQuote(incoming))
	}
	logf, err := os.OpenFile(filepath.Join(m.Dir, qemuLogFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open QEMU's log for %s: %w", spec.AppID, err)
	}
	defer logf.Close()
	cmd := exec.Command(v.cfg.QEMU, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: the daemon's death or a signal to its group does
	// not reach the guest.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start QEMU for %s: %w", spec.AppID, err)
	}
	ticks, _ := vmm.StartTicks(cmd.Process.Pid)
	g := &vmGuest{
		pf: vmm.Pidfile{
			AppID: spec.AppID, DeploymentID: spec.DeploymentID, Slot: spec.Slot, PID: cmd.Process.Pid,
			BootID: v.bootID, StartTicks: ticks, StartedAt: time.Now().UTC(), Endpoint: m.endpoint(),
		},
		rec:  record{GuestImage: v.cfg.Image.Version, Accel: m.Accel, Machine: m.Hash(), MemoryMiB: spec.MemoryMiB, Restored: incoming != "", Cmdline: args},
		done: make(chan struct{}),
		log:  tenantLog{path: filepath.Join(m.Dir, tenantLogFile)},
	}
	go func() { _ = cmd.Wait(); close(g.done) }()
	fail := func(err error) (*vmGuest, error) {
		_ = cmd.Process.Kill()
		<-g.done
		g.close()
		b, _ := os.ReadFile(filepath.Join(m.Dir, qemuLogFile))
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
	if err := v.connect(ctx, g); err != nil {
		return fail(err)
	}
	return g, nil
}

// connect attaches QMP and the control channel to g's sockets.
func (v *VMM) connect(ctx context.Context, g *vmGuest) error {
	dir := v.appDir(g.pf.AppID)
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

func (v *VMM) writeRecord(app string, r record) error {
	b, _ := json.Marshal(r)
	return atomicfile.WriteFile(filepath.Join(v.appDir(app), recordFile), b, 0o640)
}
