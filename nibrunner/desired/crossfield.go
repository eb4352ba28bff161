package desired

import (
	"fmt"
	"strconv"
)

// crossField enforces the rules that span fields or entries. It runs on
// whatever decoded, so one pass reports every reason; a field that did not
// decode is empty and its rules are skipped rather than reported twice.
func (d *decoder) crossField(doc *HostDesiredState) {
	volumes := map[VolumeId]bool{}
	firstVolume := map[VolumeId]int{}
	for i, v := range doc.Volumes {
		if v.VolumeId == "" {
			continue
		}
		volumes[v.VolumeId] = true
		if j, dup := firstVolume[v.VolumeId]; dup {
			d.fail(fmt.Sprintf("volumes[%d].volumeId", i), "%s is already used by volumes[%d]", quote(string(v.VolumeId)), j)
			continue
		}
		firstVolume[v.VolumeId] = i
	}

	firstApp := map[AppId]int{}
	for i, in := range doc.Instances {
		p := fmt.Sprintf("instances[%d]", i)
		if in.AppId != "" {
			if j, dup := firstApp[in.AppId]; dup {
				d.fail(p+".appId", "%s is already used by instances[%d]", quote(string(in.AppId)), j)
			} else {
				firstApp[in.AppId] = i
			}
		}
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

	firstCheckpoint := map[CheckpointId]int{}
	for i, c := range doc.Checkpoints {
		if c.CheckpointId == "" {
			continue
		}
		if j, dup := firstCheckpoint[c.CheckpointId]; dup {
			d.fail(fmt.Sprintf("checkpoints[%d].checkpointId", i), "%s is already used by checkpoints[%d]", quote(string(c.CheckpointId)), j)
			continue
		}
		firstCheckpoint[c.CheckpointId] = i
	}

	firstExport := map[ExportId]int{}
	for i, e := range doc.Exports {
		if e.ExportId == "" {
			continue
		}
		if j, dup := firstExport[e.ExportId]; dup {
			d.fail(fmt.Sprintf("exports[%d].exportId", i), "%s is already used by exports[%d]", quote(string(e.ExportId)), j)
			continue
		}
		firstExport[e.ExportId] = i
	}
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
