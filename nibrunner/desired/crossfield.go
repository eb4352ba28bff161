package desired

import (
	"fmt"
	"strconv"
)

// crossField enforces the rules that span fields or entries. It runs on
// whatever decoded, so one pass reports every reason; a field that did not
// decode is empty and its rules are skipped rather than reported twice.
func (d *decoder) crossField(doc *HostDesiredState) {
	volumes := unique(d, doc.Volumes, "volumes", "volumeId", func(v DesiredVolume) VolumeId { return v.VolumeId })
	owner := make(map[VolumeId]int, len(doc.Volumes))
	for i := len(doc.Volumes) - 1; i >= 0; i-- {
		if v := doc.Volumes[i]; v.VolumeId != "" {
			owner[v.VolumeId] = i
		}
	}
	unique(d, doc.Instances, "instances", "appId", func(in DesiredInstance) AppId { return in.AppId })
	unique(d, doc.Checkpoints, "checkpoints", "checkpointId", func(c DesiredCheckpoint) CheckpointId { return c.CheckpointId })
	unique(d, doc.Exports, "exports", "exportId", func(e DesiredExport) ExportId { return e.ExportId })

	routed := map[Hostname]string{} // hostname -> where the document first names it
	for i, in := range doc.Instances {
		p := fmt.Sprintf("instances[%d]", i)
		for j, h := range in.Hostnames {
			if h.Hostname == "" {
				continue
			}
			at := fmt.Sprintf("%s.hostnames[%d]", p, j)
			if first, dup := routed[h.Hostname]; dup {
				d.fail(at+".hostname", "%s is already named by %s: the proxy routes a hostname to one app, so name it once", quote(string(h.Hostname)), first)
				continue
			}
			routed[h.Hostname] = fmt.Sprintf("%s (app %s)", at, quote(string(in.AppId)))
		}
		if in.VolumeId != "" && !volumes[in.VolumeId] {
			d.fail(p+".volumeId", "%s is not one of this document's volumes", quote(string(in.VolumeId)))
		}
		if other, j, ok := otherOwner(in.AppId, in.VolumeId, doc.Volumes, owner); ok {
			d.fail(p+".volumeId", "%s is app %s's volume (volumes[%d].appId), not %s's: two guests writing one filesystem would corrupt it; give %s a volume of its own, or, to hand this one over, set volumes[%d].appId to %s (and name it on no other instance)",
				quote(string(in.VolumeId)), quote(other), j, quote(string(in.AppId)), quote(string(in.AppId)), j, quote(string(in.AppId)))
		}
		if in.Activation != nil && in.IdleTimeoutMs != nil {
			d.fail(p+".activation", "is refused beside idleTimeoutMs, its older spelling: name one of them")
		}
		if in.Activation != nil && in.DesiredState != "" && in.DesiredState != StateOnRequest &&
			in.Activation.SleepWhen.Kind != "" && in.Activation.SleepWhen.Kind != SleepNever {
			d.fail(p+".activation.sleepWhen.kind", "%s is refused on a %s instance: only on-request may sleep, since nothing else would wake it",
				quote(string(in.Activation.SleepWhen.Kind)), in.DesiredState)
		}
		d.ports(p+".config", in.Config)
	}
	for i, e := range doc.Exports {
		if other, j, ok := otherOwner(e.AppId, e.VolumeId, doc.Volumes, owner); ok {
			d.fail(fmt.Sprintf("exports[%d].appId", i), "%s does not own volume %s: volumes[%d] is app %s's; an export holds one app's volume, so name that app",
				quote(string(e.AppId)), quote(string(e.VolumeId)), j, quote(other))
		}
	}
}

// otherOwner returns the app owning volume id, and its index, when that
// is a volume of this document belonging to an app other than app. A
// volume the document does not list is not judged (an instance's is
// refused as missing; an export's may be one an earlier document listed,
// since volumes are not authoritative).
func otherOwner(app AppId, id VolumeId, volumes []DesiredVolume, owner map[VolumeId]int) (string, int, bool) {
	i, listed := owner[id]
	if app == "" || !listed || volumes[i].AppId == "" || volumes[i].AppId == app {
		return "", 0, false
	}
	return string(volumes[i].AppId), i, true
}

// unique refuses an id that an earlier entry of list already uses, naming
// both entries, and returns the set of ids seen. An entry whose id did not
// decode (empty) was already refused and is skipped.
func unique[T any, K ~string](d *decoder, items []T, list, field string, id func(T) K) map[K]bool {
	first := make(map[K]int, len(items))
	seen := make(map[K]bool, len(items))
	for i, it := range items {
		k := id(it)
		if k == "" {
			continue
		}
		seen[k] = true
		if j, dup := first[k]; dup {
			d.fail(fmt.Sprintf("%s[%d].%s", list, i, field), "%s is already used by %s[%d]", quote(string(k)), list, j)
			continue
		}
		first[k] = i
	}
	return seen
}

// implicitHTTPPortName is the name httpPort carries among an app's ports.
const implicitHTTPPortName = "http"

// ports refuses a port name used twice (counting the implicit "http") and
// a guest port used twice (counting httpPort): the proxy and the host port
// range could not tell them apart.
func (d *decoder) ports(path string, c AppConfig) {
	names := map[PortName]string{implicitHTTPPortName: "the implicit http port"}
	guest := map[GuestPort]string{}
	if c.HttpPort != 0 {
		guest[GuestPort(c.HttpPort)] = "httpPort"
	}
	for i, port := range c.Ports {
		p := fmt.Sprintf("%s.ports[%d]", path, i)
		if port.Name != "" {
			if other, dup := names[port.Name]; dup {
				d.fail(p+".name", "%s is already taken by %s", quote(string(port.Name)), other)
			} else {
				names[port.Name] = "ports[" + strconv.Itoa(i) + "]"
			}
		}
		if port.GuestPort != 0 {
			if other, dup := guest[port.GuestPort]; dup {
				d.fail(p+".guestPort", "%d is already taken by %s", port.GuestPort, other)
			} else {
				guest[port.GuestPort] = "ports[" + strconv.Itoa(i) + "]"
			}
		}
	}
}
