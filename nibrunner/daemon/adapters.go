package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/volume"
)

// FileVolumes keeps each volume as a plain sparse file <Dir>/<id>.img: no
// filesystem, no seeding. It stands in for volume.Local where mke2fs is
// not wanted (the fake VMM never mounts a volume, and a thousand-instance
// benchmark should not format a thousand filesystems).
type FileVolumes struct{ Dir string }

// List implements Volumes.
func (f FileVolumes) List(ctx context.Context) (map[string]VolumeInfo, error) {
	return volume.ListFiles(f.Dir, ".img")
}

// Path implements Volumes.
func (f FileVolumes) Path(id string) string { return filepath.Join(f.Dir, id+".img") }

// Converge implements Volumes.
func (f FileVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	v := volume.Volume{VolumeID: spec.VolumeID, Path: f.Path(spec.VolumeID)}
	if spec.State == volume.Absent {
		if err := os.Remove(v.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
		}
		v.Deleted = true
		return v, nil
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
	}
	want := int64(volume.RoundSize(spec.SizeBytes))
	st, err := os.Stat(v.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		tmp := filepath.Join(f.Dir, ".new-"+spec.VolumeID)
		if err := os.WriteFile(tmp, nil, 0o600); err != nil {
			return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
		}
		if err := os.Truncate(tmp, want); err != nil {
			return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
		}
		if err := os.Rename(tmp, v.Path); err != nil {
			return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
		}
		v.Created, v.SizeBytes = true, want
	case err != nil:
		return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
	case want < st.Size():
		v.SizeBytes = st.Size()
		return v, &volume.Error{VolumeID: spec.VolumeID, Err: fmt.Errorf("%w: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", volume.ErrShrink, st.Size(), spec.SizeBytes, st.Size())}
	case want > st.Size():
		if err := os.Truncate(v.Path, want); err != nil {
			return v, &volume.Error{VolumeID: spec.VolumeID, Err: err}
		}
		v.Grown, v.SizeBytes = true, want
	default:
		v.SizeBytes = st.Size()
	}
	return v, nil
}

// NoNetwork applies nothing: for the fake VMM, whose guests listen on
// loopback, and for hosts where the network package is not wired yet.
type NoNetwork struct{}

// Apply implements Network.
func (NoNetwork) Apply(context.Context, []NetSlot) error { return nil }

// HostNetwork adapts network.Host (a tap per slot and the nibrun table)
// to the Network port.
type HostNetwork struct{ Host network.Host }

// Apply implements Network.
func (h HostNetwork) Apply(ctx context.Context, slots []NetSlot) error {
	apps := make([]network.App, len(slots))
	for i, s := range slots {
		ports := make([]int, len(s.Ports))
		for j, p := range s.Ports {
			ports[j] = p.GuestPort
		}
		apps[i] = network.App{Slot: s.Slot, AppID: s.AppID, Running: s.Forward, HTTPPort: s.HTTPPort, Ports: ports}
	}
	return h.Host.Apply(ctx, apps)
}

// NoRouter applies no routes, for a host without an HTTP proxy: the
// daemon still publishes its table (Backend reads it).
type NoRouter struct{}

// Apply implements Router.
func (NoRouter) Apply(context.Context, []route.Route) error { return nil }
