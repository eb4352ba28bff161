package daemon

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/jobs"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot"
)

// ReportName is the report's file name in the state folder.
const ReportName = "reported.json"

// StateDBName is the state database's file name in the state folder.
const StateDBName = "state.db"

// report says what the host is, after this pass, in sentences a person
// can act on: each instance as statuses says (instanceStatuses). It
// renders, and changes nothing the daemon holds (mu held).
func (d *Daemon) report(now time.Time, statuses map[string]plan.Status, cps map[string]CheckpointInfo, exps map[string]ExportInfo) *reported.HostReportedState {
	r := &reported.HostReportedState{
		HostId:     desired.HostId(d.cfg.HostID),
		ReportedAt: now,
		State:      reported.HostRegistering,
		Capacity:   reported.Resources{VcpuCount: d.cfg.VCPUs, MemoryMib: d.cfg.CapacityMiB, CacheBytes: d.cfg.CacheBytes},
		Versions:   reported.Versions{Agent: d.cfg.AgentVersion, GuestImage: d.cfg.GuestImageVersion, Vmm: d.deps.VMM.Version()},
		Volumes:    []reported.Volume{}, Instances: []reported.Instance{},
		Checkpoints: []reported.Checkpoint{}, Exports: []reported.Export{},
		AcceptedDigest: desired.Sha256Digest(d.acc.digest),
		Message:        d.hostMessage(),
		Warnings:       d.acc.warnings,
	}
	usedMiB, usedCPU := d.apps.used()
	given, held := d.apps.memoryInUse()
	r.Memory = &reported.HostMemory{GivenMib: given, HeldMib: held, CapacityMib: d.cfg.CapacityMiB, Overcommit: max(d.cfg.MemoryOvercommit, 1)}
	r.Allocatable = reported.Resources{VcpuCount: d.cfg.VCPUs - min(usedCPU, d.cfg.VCPUs), MemoryMib: d.cfg.CapacityMiB - min(usedMiB, d.cfg.CapacityMiB), CacheBytes: d.cfg.CacheBytes}
	if d.acc.doc == nil {
		return r
	}
	r.State = reported.HostReady
	if d.acc.doc.HostId != "" {
		r.HostId = d.acc.doc.HostId
	}
	for i := range d.acc.doc.Instances {
		in := &d.acc.doc.Instances[i]
		r.Instances = append(r.Instances, d.apps.instanceReport(in, statuses[string(in.AppId)], now))
	}
	r.Volumes = d.vols.reports(d.acc.doc, now, d.volumeApp, d.deps.Schedule)
	failures := map[string]string{}
	for _, v := range r.Volumes {
		if v.State == reported.VolumeFailed {
			failures[string(v.VolumeId)] = v.Message
		}
	}
	for _, c := range d.acc.doc.Checkpoints {
		if c.DesiredState != desired.Present {
			continue
		}
		f := plan.CheckpointFacts{Volume: d.vols.copyFacts(string(c.VolumeId), failures)}
		if info, ok := cps[string(c.CheckpointId)]; ok {
			f.Exists, f.Reference, f.ReadyAt = true, info.Reference, info.ReadyAt
			f.Key, f.Digest = info.Key, info.Digest
		}
		f.Create = d.jobFacts(cpCreateJob(string(c.CheckpointId)))
		r.Checkpoints = append(r.Checkpoints, explain.CheckpointStatus(d.acc.doc, c, f, now))
	}
	for _, e := range d.acc.doc.Exports {
		if e.DesiredState != desired.Present {
			continue
		}
		f := plan.ExportFacts{Volume: d.vols.copyFacts(string(e.VolumeId), failures)}
		if info, ok := exps[string(e.ExportId)]; ok {
			f.Exists, f.SizeBytes, f.ReadyAt = true, info.SizeBytes, info.ReadyAt
		}
		f.Write = d.jobFacts(expWriteJob(string(e.ExportId)))
		r.Exports = append(r.Exports, explain.ExportStatus(d.acc.doc, e, f, now))
	}
	return r
}

// jobFacts is how background job id is doing, as the status functions
// read it.
func (d *Daemon) jobFacts(id string) plan.JobFacts {
	st, ok := d.jobs.Status(id)
	if !ok {
		return plan.JobFacts{}
	}
	return plan.JobFacts{Running: st.State == jobs.Preparing, Failed: st.State == jobs.Failed, Attempts: st.Attempts, RetryAt: st.RetryAt, Message: st.Message}
}

// instanceStatuses is what the planner says of each instance of the
// document (InstanceStatus) from what is true now, after this pass acted;
// nil with no document (mu held).
func (d *Daemon) instanceStatuses(now time.Time) map[string]plan.Status {
	if d.acc.doc == nil {
		return nil
	}
	obs := d.observed(now, "", nil, nil)
	d.apps.probedNow(obs.Instances)
	out := make(map[string]plan.Status, len(d.acc.doc.Instances))
	for i := range d.acc.doc.Instances {
		in := &d.acc.doc.Instances[i]
		out[string(in.AppId)] = explain.InstanceStatus(in, obs)
	}
	return out
}

// instanceReport renders status, what the planner says of in, with what
// the daemon measured and remembers of it.
func (ps *apps) instanceReport(in *desired.DesiredInstance, status plan.Status, now time.Time) reported.Instance {
	app := string(in.AppId)
	ri := reported.Instance{AppId: in.AppId, DeploymentId: in.DeploymentId}
	a := ps.known(app)
	if a.hasSlot {
		net := slot.Network(a.slot)
		ri.HostPort = uint16(net.HostPort)
		if !ps.cfg.UserNetwork {
			ri.GuestIpv4 = net.GuestIPv4.String()
		}
		// A guest the VMM reaches on a loopback port answers there, not at
		// the slot's: QEMU's user network forwards the slot's port (the
		// same number), but the fake VMM's guest listens on a port of its
		// own, so its report names that one.
		if st := a.vm; a.up() {
			if ap, err := netip.ParseAddrPort(st.Endpoint); err == nil && ap.Addr().IsLoopback() {
				ri.HostPort = ap.Port()
			}
		}
	}
	if m := a.meters; a.metered {
		ri.Meters = &reported.Meters{RunningMs: m.RunningMs, IdleMs: m.IdleMs, CpuMs: m.CpuMs, RxBytes: m.RxBytes, TxBytes: m.TxBytes}
	}
	rec := a.rec
	if rec != nil && rec.DeploymentID != string(in.DeploymentId) {
		rec = nil // the old deployment's record says nothing of this one
	}
	st := a.vm
	up := a.up() && st.DeploymentID == string(in.DeploymentId)
	ri.State = reported.InstanceState(status.State)
	ri.Message = reported.Truncate(status.Message)
	if p, ok := ps.pulling(in); ok && !up {
		ri.Message = reported.Truncate(p.Sentence())
	}
	if rec != nil {
		ri.RestartCount = uint32(rec.Budget.Total)
		ri.LastExitCode = rec.LastExitCode
		for _, l := range rec.LayerDigests {
			ri.LayerDigests = append(ri.LayerDigests, desired.Sha256Digest(l))
		}
		if up {
			s := rec.StartedAt
			ri.StartedAt = &s
			ri.Memory = &reported.Memory{GivenMib: rec.MemoryMiB, HeldMib: a.heldMiB()}
			if m := a.measured; !m.at.IsZero() && m.pid == st.PID {
				ri.Memory.TcgCacheMib = m.m.TCGCacheBytes >> 20
			}
			if m := a.measured; !m.at.IsZero() && m.pid == st.PID {
				share := 0.0
				if el := m.at.Sub(rec.StartedAt); el > 0 {
					share = float64(m.cpu) / float64(el)
				}
				ri.Compute = &reported.Compute{MemoryTotalBytes: m.m.MemoryTotalBytes, MemoryUsedBytes: m.m.MemoryUsedBytes, CpuShare: share, MeasuredAt: m.at}
			}
		}
		h := rec.Health.LastHealthyAt
		if p := a.prober; p != nil && up {
			h = p.record().LastHealthyAt
		}
		if !h.IsZero() {
			ri.LastHealthyAt = &h
		}
		if c := rec.ConvergedAt; !c.IsZero() {
			ri.ConvergedAt = &c
		}
	}
	return ri
}

// volumeApp is the app volume id is reported for: the one a document
// named it for, or the one whose record mounts it (mu held).
func (d *Daemon) volumeApp(id string) string {
	if app := d.vols.appOf(id); app != "" {
		return app
	}
	if app := d.apps.mounting(id); app != "" {
		return app
	}
	return "unknown"
}

func (d *Daemon) writeReport(r *reported.HostReportedState) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	b = append(b, '\n')
	if err := atomicfile.WriteFile(filepath.Join(d.cfg.StateDir, ReportName), b, 0o640); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// hostMessage is the report's message: why the document's source cannot
// be read, then why the last document was refused, either alone when the
// other is "". When the source is why there is no document (the object
// was deleted), the source's sentence says it, and only what the host
// does meanwhile is added.
// pulling is how the pull of one of in's image layers goes, while the
// layer cache runs one (*layer.Cache tells it; other Layers do not).
func (ps *apps) pulling(in *desired.DesiredInstance) (layer.Pull, bool) {
	pl, ok := ps.deps.Layers.(interface {
		Pulling(reference string) (layer.Pull, bool)
	})
	if !ok {
		return layer.Pull{}, false
	}
	for _, l := range in.Layers {
		if l.Kind == desired.LayerImage {
			if p, ok := pl.Pulling(string(l.Reference)); ok {
				return p, true
			}
		}
	}
	return layer.Pull{}, false
}

func (d *Daemon) hostMessage() string {
	return reported.Truncate(explain.HostMessage(d.acc.sourceProblem, d.acc.refusal, d.acc.noDocument, d.keeping()))
}
