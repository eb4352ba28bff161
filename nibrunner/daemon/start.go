package daemon

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
)

// bringUp starts (or wakes) app's guest on its worker: it makes the
// layers ready (bounded by layerFetches, outside the VM gate, so a slow
// fetch holds back no other app), then takes a turn at the VM gate (a wake
// that a request waits on goes first) and boots. The result is committed
// under the lock.
func (ps *apps) bringUp(ctx context.Context, x plan.InstanceAction, in *desired.DesiredInstance, n int, urgent bool) {
	id := x.AppID
	images, err := ps.prepareLayers(ctx, in)
	if err != nil {
		now := ps.now()
		ps.commit(id, func(a *app) {
			a.wantAwake = false
			a.startFailed(x, in, explain.LayersNotReady(err), now)
		})
		return
	}
	spec := ps.spec(in, n, images)
	if err := ps.gate.acquire(ctx, urgent); err != nil {
		ps.commit(id, func(a *app) { a.wantAwake = false })
		return
	}
	cctx, cancel := context.WithTimeout(ctx, ps.cfg.OpTimeout)
	var st vmm.Status
	var discardErr error
	if x.Kind == plan.Wake {
		st, err = ps.deps.VMM.Wake(cctx, spec)
	} else {
		st, err = ps.deps.VMM.Start(cctx, spec)
	}
	if err != nil && ctx.Err() != nil {
		// The daemon is closing: the start is abandoned, not failed (its
		// snapshot kept); the next daemon's first pass repairs it.
		cancel()
		ps.gate.release()
		ps.commit(id, func(a *app) { a.wantAwake = false })
		return
	}
	if err != nil && x.Kind == plan.Wake {
		// A snapshot whose wake failed is not tried again: its retry is a
		// restart, which boots cold (see startFailed).
		discardErr = ps.deps.VMM.Discard(cctx, id)
	}
	cancel()
	ps.gate.release()
	if discardErr != nil {
		ps.cfg.Logf("nibrunnerd: discard the snapshot of %s after its wake failed: %v", id, discardErr)
	}
	now := ps.now()
	ps.commit(id, func(a *app) { ps.started(a, x, in, st, err, now) })
}

// prepareLayers makes in's layers ready to attach.
func (ps *apps) prepareLayers(ctx context.Context, in *desired.DesiredInstance) ([]layer.Image, error) {
	specs := layerSpecs(in)
	select {
	case ps.fetches <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-ps.fetches }()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return ps.deps.Layers.PrepareAll(lctx, specs)
}

// layerSpecs are the layer cache's specs of in's layers.
func layerSpecs(in *desired.DesiredInstance) []layer.Spec {
	specs := make([]layer.Spec, len(in.Layers))
	for i, l := range in.Layers {
		specs[i] = layer.Spec{Index: i, Kind: layer.Kind(l.Kind), Digest: string(l.Digest), ObjectKey: string(l.ObjectKey), DestinationPath: string(l.DestinationPath), Reference: string(l.Reference)}
		if l.SizeBytes != nil {
			sz := int64(*l.SizeBytes)
			specs[i].SizeBytes = &sz
		}
	}
	return specs
}

// started records a start's outcome in a (mu held). A wake of a snapshot
// that the VMM booted cold instead (it could not restore it, and dropped
// it) says so in the record's message until the guest next goes down.
func (ps *apps) started(a *app, x plan.InstanceAction, in *desired.DesiredInstance, st vmm.Status, err error, now time.Time) {
	a.wantAwake = false
	if err != nil {
		a.startFailed(x, in, explain.StartFailed(x.Kind == plan.Wake, err), now)
		return
	}
	dep := string(in.DeploymentId)
	rec := a.recordOf(in)
	coldWake := x.Kind == plan.Wake && rec.Sleeping && !st.Restored
	switch x.Kind {
	case plan.Restart:
		rec.Budget = rec.Budget.ForDeployment(dep).Restarted(x.Restart, now)
	case plan.Wake:
	case plan.Start, plan.Replace, plan.Recover:
		rec.Budget = rec.Budget.ForDeployment(dep).Started(now)
	case plan.GiveUp, plan.Sleep, plan.Stop, plan.Forget, plan.NoAction:
		// Not handed to bringUp (work): nothing booted.
	}
	a.failure, a.failureDep = "", ""
	rec.Booted, rec.Sleeping = true, false
	rec.MemoryMiB = uint64(in.Config.Resources.MemoryMib)
	rec.Health = health.Started(now)
	rec.StartedAt = now // the daemon's clock, which the sleep policy reads
	rec.FailedAt, rec.FailReason, rec.Message = time.Time{}, "", ""
	if coldWake {
		rec.Message = explain.WokenCold(st.WokenCold)
	}
	rec.ConvergedAt = time.Time{}
	rec.LayerDigests = rec.LayerDigests[:0]
	for _, l := range in.Layers {
		rec.LayerDigests = append(rec.LayerDigests, l.ContentDigest())
	}
	a.vm, a.hasVM = st, true
	ps.startProber(a, st)
}

// recordOf is a's record of in's deployment, a fresh one (and budget)
// when it has none (mu held).
func (a *app) recordOf(in *desired.DesiredInstance) *record {
	dep := string(in.DeploymentId)
	if a.rec == nil || a.rec.DeploymentID != dep {
		a.rec = &record{AppID: a.id, DeploymentID: dep, VolumeID: string(in.VolumeId), Budget: backoff.Budget{DeploymentID: dep}}
	}
	return a.rec
}

// startFailed records that x, a start, restart or wake of in, failed for
// reason why at now (mu held). A restart still spends one restart. The
// failure is recorded at now, and the planner tries again as a restart
// once the next backoff (counted from this attempt) is over, within the
// budget: a guest that cannot boot backs off instead of spinning. A wake
// spends nothing itself, but its snapshot is gone (bringUp drops it), so
// it too is retried as a restart, cold, from the volume.
func (a *app) startFailed(x plan.InstanceAction, in *desired.DesiredInstance, why string, now time.Time) {
	dep := string(in.DeploymentId)
	rec := a.recordOf(in)
	if x.Kind == plan.Wake && rec.Sleeping {
		why += explain.MsgSnapshotDropped
		rec.Sleeping = false
	}
	a.failure, a.failureDep = why, dep
	if x.Kind == plan.Restart {
		rec.Budget = rec.Budget.ForDeployment(dep).Restarted(x.Restart, now)
	}
	rec.FailedAt, rec.FailReason = now, why
	rec.Health.State = health.Failed
}

func (ps *apps) spec(in *desired.DesiredInstance, n int, images []layer.Image) vmm.Spec {
	c := in.Config
	layers := make([]vmm.Layer, len(in.Layers))
	for i, l := range in.Layers {
		layers[i] = vmm.Layer{Kind: vmm.LayerKind(l.Kind), Digest: l.ContentDigest(), DestinationPath: string(l.DestinationPath)}
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
	network.DNS = ps.cfg.DNS
	if ps.cfg.UserNetwork {
		network = vmm.Network{HostPort: slot.HostPort(n)}
	}
	return vmm.Spec{
		AppID: string(in.AppId), DeploymentID: string(in.DeploymentId), Slot: n,
		MemoryMiB: int(c.Resources.MemoryMib), VCPUs: int(c.Resources.VcpuCount),
		Layers: layers, VolumePath: ps.deps.Volumes.Path(string(in.VolumeId)),
		Command:  vmm.Command{Program: string(c.Command.Program), Args: c.Command.Args, WorkingDirectory: string(c.Command.WorkingDirectory), Environment: env},
		HTTPPort: int(c.HttpPort), Ports: ports(in, n),
		Restart:  vmm.RestartPolicy{MaxRestarts: int(rp.MaxRestarts), InitialBackoff: ms(rp.InitialBackoffMs), MaxBackoff: ms(rp.MaxBackoffMs), BackoffFactor: rp.BackoffFactor, ResetAfter: ms(rp.ResetAfterMs)},
		Network:  network,
		Hostname: hostname,
	}
}

// ms reads a document's count of milliseconds (restart policies, health
// checks) as a duration, saturating rather than wrapping to a negative one.
var ms = backoff.Millis[uint64]
