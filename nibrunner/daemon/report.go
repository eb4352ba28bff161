package daemon

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot"
)

// ReportName is the report's file name in the state folder.
const ReportName = "reported.json"

// report says what the host is, after this pass, in sentences a person
// can act on.
func (d *Daemon) report(now time.Time, vols map[string]VolumeInfo, cps map[string]CheckpointInfo, exps map[string]ExportInfo) *reported.HostReportedState {
	r := &reported.HostReportedState{
		HostId:     desired.HostId(d.cfg.HostID),
		ReportedAt: now,
		State:      reported.HostRegistering,
		Capacity:   reported.Resources{VcpuCount: d.cfg.VCPUs, MemoryMib: d.cfg.CapacityMiB, CacheBytes: d.cfg.CacheBytes},
		Versions:   reported.Versions{Agent: d.cfg.AgentVersion, GuestImage: d.cfg.GuestImageVersion, Vmm: d.deps.VMM.Version()},
		Volumes:    []reported.Volume{}, Instances: []reported.Instance{},
		Checkpoints: []reported.Checkpoint{}, Exports: []reported.Export{},
		AcceptedDigest: desired.Sha256Digest(d.digest),
		Message:        d.hostMessage(),
	}
	var usedMiB uint64
	var usedCPU uint32
	for app, a := range d.apps {
		if !a.up() {
			continue
		}
		if rec := a.rec; rec != nil {
			usedMiB += rec.MemoryMiB
		}
		if in := d.instance(app); in != nil {
			usedCPU += in.Config.Resources.VcpuCount
		}
	}
	given, held := d.memoryInUse()
	r.Memory = &reported.HostMemory{GivenMib: given, HeldMib: held, CapacityMib: d.cfg.CapacityMiB, Overcommit: max(d.cfg.MemoryOvercommit, 1)}
	r.Allocatable = reported.Resources{VcpuCount: d.cfg.VCPUs - min(usedCPU, d.cfg.VCPUs), MemoryMib: d.cfg.CapacityMiB - min(usedMiB, d.cfg.CapacityMiB), CacheBytes: d.cfg.CacheBytes}
	if d.doc == nil {
		return r
	}
	r.State = reported.HostReady
	if d.doc.HostId != "" {
		r.HostId = d.doc.HostId
	}
	// The planner says each instance's state from what is true now, after
	// this pass acted.
	obs := plan.Observed{Now: now, Instances: make(map[string]plan.Instance, len(d.doc.Instances)), Problems: d.problems}
	for _, in := range d.doc.Instances {
		a := d.known(string(in.AppId))
		o := d.facts(a)
		if p := a.prober; p != nil {
			// The guest's health as its prober sees it now.
			o.Health = p.record().State
		}
		obs.Instances[a.id] = o
	}
	for i := range d.doc.Instances {
		r.Instances = append(r.Instances, d.instanceReport(&d.doc.Instances[i], obs))
	}
	r.Volumes = d.volumeReports(vols)
	for _, c := range d.doc.Checkpoints {
		if c.DesiredState != desired.Present {
			continue
		}
		rc := reported.Checkpoint{CheckpointId: c.CheckpointId, VolumeId: c.VolumeId, State: reported.CheckpointPending}
		d.checkpointReport(&rc, cps)
		if _, ok := vols[string(c.VolumeId)]; !ok && rc.State == reported.CheckpointPending {
			if w := d.judgeMissingVolume(r.Volumes, "checkpoint", string(c.VolumeId), ""); w.failed {
				rc.State, rc.Message = reported.CheckpointFailed, w.message
			} else {
				rc.Message = w.message
			}
		}
		r.Checkpoints = append(r.Checkpoints, rc)
	}
	for _, e := range d.doc.Exports {
		if e.DesiredState != desired.Present {
			continue
		}
		re := reported.Export{ExportId: e.ExportId, State: reported.ExportPending}
		d.exportReport(&re, exps)
		if _, ok := vols[string(e.VolumeId)]; !ok && re.State == reported.ExportPending {
			if w := d.judgeMissingVolume(r.Volumes, "export", string(e.VolumeId), string(e.AppId)); w.failed {
				re.State, re.Message = reported.ExportFailed, w.message
			} else {
				re.Message = w.message
			}
		}
		r.Exports = append(r.Exports, re)
	}
	return r
}

// missing is what a checkpoint or an export of a volume this host does
// not have says: a message, and whether it is failed rather than pending.
type missing struct {
	failed  bool
	message string
}

// volumeMissing judges a checkpoint or export (what) of volume id, which
// this host does not have (deleted: it had it and deleted it), for app
// (empty for a checkpoint, which names none). The host makes a volume only
// when the document lists it present, so the entry waits (pending) while
// the document does (saying why its making failed, when failure is the
// volume's message), and otherwise nothing in this document will ever
// make the volume: it is failed, saying what to change. It is judged again
// with every document, so one that lists the volume makes it pending.
func volumeMissing(doc *desired.HostDesiredState, what, id, app string, deleted bool, failure string) missing {
	for i, v := range doc.Volumes {
		if string(v.VolumeId) != id {
			continue
		}
		if v.DesiredState == desired.Present {
			if failure != "" {
				return missing{message: reported.Truncate(fmt.Sprintf("waiting for volume %s to be made (volumes[%d]), which failed: %s", id, i, failure))}
			}
			return missing{message: fmt.Sprintf("waiting for volume %s to be made (volumes[%d])", id, i)}
		}
		return missing{failed: true, message: fmt.Sprintf("volume %s is asked absent (volumes[%d].desiredState), so there is nothing to %s: ask for it present, or point this %s at a volume the host holds", id, i, what, what)}
	}
	if deleted {
		return missing{failed: true, message: fmt.Sprintf("volume %s was deleted from this host and this document does not list it, so there is nothing to %s: point this %s at a volume the host holds, or drop it", id, what, what)}
	}
	forApp := ""
	if app != "" {
		forApp = " with appId " + app
	}
	return missing{failed: true, message: fmt.Sprintf("volume %s is not one of this document's volumes and this host has none by that name, so nothing will make it: add it to volumes%s, or point this %s at a volume the host holds", id, forApp, what)}
}

// judgeMissingVolume is volumeMissing with what this host knows: whether
// it deleted the volume, and the failure vols (this report's volumes)
// gives it.
func (d *Daemon) judgeMissingVolume(vols []reported.Volume, what, id, app string) missing {
	deleted := false
	if v := d.volumes[id]; v != nil {
		deleted = v.wasDelete
	}
	var failure string
	for _, v := range vols {
		if string(v.VolumeId) == id && v.State == reported.VolumeFailed {
			failure = v.Message
		}
	}
	return volumeMissing(d.doc, what, id, app, deleted, failure)
}

// instanceReport renders what the planner says of in (InstanceStatus) with
// what the daemon measured and remembers of it.
func (d *Daemon) instanceReport(in *desired.DesiredInstance, obs plan.Observed) reported.Instance {
	now := obs.Now
	app := string(in.AppId)
	ri := reported.Instance{AppId: in.AppId, DeploymentId: in.DeploymentId}
	a := d.known(app)
	if a.hasSlot {
		net := slot.Network(a.slot)
		ri.HostPort = uint16(net.HostPort)
		if !d.cfg.UserNetwork {
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
	status := plan.InstanceStatus(in, obs)
	ri.State = reported.InstanceState(status.State)
	ri.Message = reported.Truncate(status.Message)
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
		if plan.Converged(in.DesiredState, status.State) {
			if rec.ConvergedAt.IsZero() {
				rec.ConvergedAt = now
			}
			c := rec.ConvergedAt
			ri.ConvergedAt = &c
		} else {
			rec.ConvergedAt = time.Time{}
		}
	}
	return ri
}

func (d *Daemon) volumeReports(vols map[string]VolumeInfo) []reported.Volume {
	out := []reported.Volume{}
	listed := map[string]bool{}
	for _, v := range d.doc.Volumes {
		id := string(v.VolumeId)
		listed[id] = true
		rv := reported.Volume{VolumeId: v.VolumeId, AppId: v.AppId, SizeBytes: plan.RoundSize(v.SizeBytes)}
		info, there := vols[id]
		dv := d.volumes[id]
		if dv == nil {
			dv = &vol{id: id}
		}
		switch {
		case there:
			rv.State, rv.SizeBytes, rv.DevicePath = reported.VolumeReady, info.SizeBytes, info.Path
			if u := dv.usage; dv.measured {
				rv.Usage = &reported.Usage{TotalBytes: u.TotalBytes, UsedBytes: u.UsedBytes, MeasuredAt: u.MeasuredAt}
			}
			if e := dv.msg; e != "" {
				rv.Message = reported.Truncate(e)
				if v.DesiredState == desired.Present {
					rv.State = reported.VolumeFailed
				}
			}
		case v.DesiredState == desired.Absent:
			rv.State = reported.VolumeDeleted
			if dv.wasDelete {
				rv.SizeBytes = dv.deleted.SizeBytes
			}
		case dv.msg != "":
			rv.State, rv.Message = reported.VolumeFailed, reported.Truncate(dv.msg)
		default:
			rv.State = reported.VolumePending
		}
		out = append(out, rv)
	}
	// A volume the document stopped naming stays on the host, and in the
	// report, until a document says absent for it.
	for id, info := range vols {
		if listed[id] {
			continue
		}
		out = append(out, reported.Volume{VolumeId: desired.VolumeId(id), AppId: desired.AppId(d.volumeApp(id)), State: reported.VolumeDetached, SizeBytes: info.SizeBytes, DevicePath: info.Path,
			Message: "the document no longer names this volume; it is kept until a document asks for it absent"})
	}
	for id, v := range d.volumes {
		if !v.wasDelete || listed[id] {
			continue
		}
		if _, ok := vols[id]; ok {
			continue
		}
		out = append(out, reported.Volume{VolumeId: desired.VolumeId(id), AppId: desired.AppId(v.deleted.AppID), State: reported.VolumeDeleted, SizeBytes: v.deleted.SizeBytes})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VolumeId < out[j].VolumeId })
	return out
}

func (d *Daemon) volumeApp(id string) string {
	if app := d.appOfVolume(id); app != "" {
		return app
	}
	for app, a := range d.apps {
		if a.rec != nil && a.rec.VolumeID == id {
			return app
		}
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
// was deleted, so its mirror was), the source's sentence says it, and
// only what the host does meanwhile is added.
func (d *Daemon) hostMessage() string {
	var problem string
	if d.cfg.SourceProblem != nil {
		problem = d.cfg.SourceProblem()
	}
	switch {
	case problem == "":
		return d.refusal
	case d.refusal == "":
		return reported.Truncate(problem)
	case d.noDocument:
		return reported.Truncate(problem + " (" + d.keeping() + ")")
	}
	return reported.Truncate(problem + "; " + d.refusal)
}
