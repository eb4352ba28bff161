package daemon

import (
	"context"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
)

// bringUp starts (or wakes) one app's guest if everything it needs is in
// place: the network rules, its volume, room in memory, a slot, its layers.
// Whatever is missing is noted for the report and the start waits for a
// later pass. It returns the memory the guest now holds.
func (d *Daemon) bringUp(ctx context.Context, now time.Time, a plan.InstanceAction, in *desired.DesiredInstance, vms map[string]vmm.Status, vols map[string]VolumeInfo, inUse uint64) (uint64, bool) {
	app := a.AppID
	dep := string(in.DeploymentId)
	x := d.appOf(app)
	rec := x.rec
	if rec == nil || rec.DeploymentID != dep {
		// A new app, or a new deployment: a fresh record and budget.
		rec = &record{AppID: app, DeploymentID: dep, Budget: backoff.Budget{DeploymentID: dep}}
		x.rec = rec
	}
	rec.VolumeID = string(in.VolumeId)
	if !d.netReady {
		d.note(app, "waiting to be started: the host network rules are not in place yet ("+d.netErr+")", false)
		return 0, false
	}
	if _, ok := vols[string(in.VolumeId)]; !ok {
		why := "it is not made yet"
		if e := d.volErr[string(in.VolumeId)]; e != "" {
			why = e
		}
		d.note(app, fmt.Sprintf("waiting to be started: its volume %s is not ready: %s", in.VolumeId, why), false)
		return 0, false
	}
	need := uint64(in.Config.Resources.MemoryMib)
	if short := slot.Shortfall(d.cfg.CapacityMiB, inUse, need); short > 0 {
		d.note(app, slot.WaitingMessage(short), false)
		return 0, false
	}
	n, ok := d.ensureSlot(ctx, app)
	if !ok {
		return 0, false
	}
	specs := make([]layer.Spec, len(in.Layers))
	for i, l := range in.Layers {
		specs[i] = layer.Spec{Index: i, Kind: layer.Kind(l.Kind), Digest: string(l.Digest), ObjectKey: string(l.ObjectKey), DestinationPath: string(l.DestinationPath)}
		if l.SizeBytes != nil {
			sz := int64(*l.SizeBytes)
			specs[i].SizeBytes = &sz
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	images, err := d.deps.Layers.PrepareAll(lctx, specs)
	cancel()
	if err != nil {
		d.note(app, "its layers could not be made ready: "+err.Error(), true)
		return 0, false
	}
	spec := d.spec(in, n, images)
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	var st vmm.Status
	if a.Kind == plan.Wake {
		st, err = d.deps.VMM.Wake(cctx, spec)
	} else {
		st, err = d.deps.VMM.Start(cctx, spec)
	}
	cancel()
	if a.Kind == plan.Restart {
		// A restart that fails to boot still spends one restart, so a
		// guest that cannot start backs off instead of spinning.
		dec := policyOf(in).Next(rec.Budget, rec.FailedAt, now)
		rec.Budget = rec.Budget.Restarted(dec, now)
	}
	if err != nil {
		d.note(app, "the microVM could not be started: "+err.Error(), true)
		return 0, false
	}
	switch a.Kind {
	case plan.Restart, plan.Wake:
	default:
		rec.Budget = rec.Budget.ForDeployment(dep).Started(now)
	}
	rec.Booted, rec.Sleeping = true, false
	rec.MemoryMiB = need
	rec.Health = health.Started(now)
	rec.StartedAt = now // the daemon's clock, which the sleep policy reads
	rec.FailedAt, rec.FailReason, rec.Message = time.Time{}, "", ""
	rec.ConvergedAt = time.Time{}
	rec.LayerDigests = rec.LayerDigests[:0]
	for _, l := range in.Layers {
		rec.LayerDigests = append(rec.LayerDigests, string(l.Digest))
	}
	vms[app] = st
	d.startProber(app, rec, st)
	return need, true
}

// ensureSlot gives app a slot if it has none, persisting it before
// anything relies on it; a note says why when none is left.
func (d *Daemon) ensureSlot(ctx context.Context, app string) (int, bool) {
	a := d.appOf(app)
	if a.hasSlot {
		return a.slot, true
	}
	added, full := slot.Assign(d.slots(), []string{app}, d.cfg.MaxApps)
	if len(full) > 0 {
		d.note(app, fmt.Sprintf("waiting to be started: every slot of this host is taken (max_apps = %d)", d.cfg.MaxApps), false)
		return 0, false
	}
	if err := d.db.PutSlots(ctx, added); err != nil {
		d.note(app, "waiting to be started: its slot could not be recorded: "+err.Error(), false)
		return 0, false
	}
	a.slot, a.hasSlot = added[app], true
	return a.slot, true
}

func (d *Daemon) spec(in *desired.DesiredInstance, n int, images []layer.Image) vmm.Spec {
	c := in.Config
	layers := make([]vmm.Layer, len(in.Layers))
	for i, l := range in.Layers {
		layers[i] = vmm.Layer{Kind: vmm.LayerKind(l.Kind), Digest: string(l.Digest), DestinationPath: string(l.DestinationPath)}
		if i < len(images) {
			// The layer cache has already packed an executable into an
			// image at its destination, so the VMM attaches every layer
			// as a filesystem image.
			layers[i].Kind = vmm.LayerFilesystem
			layers[i].Path = images[i].Path
			layers[i].Digest = images[i].Digest
		}
	}
	env := make(map[string]string, len(c.Command.Environment))
	for k, v := range c.Command.Environment {
		env[k] = string(v)
	}
	var hostname string
	for _, h := range in.Hostnames {
		if h.Kind == desired.HostnamePlatform {
			hostname = string(h.Hostname)
			break
		}
	}
	rp := c.RestartPolicy
	network := slot.Network(n)
	if d.cfg.UserNetwork {
		network = vmm.Network{HostPort: slot.HostPort(n)}
	}
	return vmm.Spec{
		AppID: string(in.AppId), DeploymentID: string(in.DeploymentId), Slot: n,
		MemoryMiB: int(c.Resources.MemoryMib), VCPUs: int(c.Resources.VcpuCount),
		Layers: layers, VolumePath: d.deps.Volumes.Path(string(in.VolumeId)),
		Command:  vmm.Command{Program: string(c.Command.Program), Args: c.Command.Args, WorkingDirectory: string(c.Command.WorkingDirectory), Environment: env},
		HTTPPort: int(c.HttpPort), Ports: ports(in, n),
		Restart:  vmm.RestartPolicy{MaxRestarts: int(rp.MaxRestarts), InitialBackoff: ms(rp.InitialBackoffMs), MaxBackoff: ms(rp.MaxBackoffMs), BackoffFactor: rp.BackoffFactor, ResetAfter: ms(rp.ResetAfterMs)},
		Network:  network,
		Hostname: hostname,
	}
}

func ms(n uint64) time.Duration { return time.Duration(n) * time.Millisecond }
