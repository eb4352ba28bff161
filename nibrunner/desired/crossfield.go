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
	unique(d, doc.Instances, "instances", "appId", func(in DesiredInstance) AppId { return in.AppId })
	unique(d, doc.Checkpoints, "checkpoints", "checkpointId", func(c DesiredCheckpoint) CheckpointId { return c.CheckpointId })
	unique(d, doc.Exports, "exports", "exportId", func(e DesiredExport) ExportId { return e.ExportId })

	for i, in := range doc.Instances {
		p := fmt.Sprintf("instances[%d]", i)
		if in.VolumeId != "" && !volumes[in.VolumeId] {
			d.fail(p+".volumeId", "%s is not one of this document's volumes", quote(string(in.VolumeId)))
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
