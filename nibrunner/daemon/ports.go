package daemon

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/checkpoint/schedule"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/export"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/volume"
)

// The daemon's ports: small interfaces over what does I/O, declared here by
// their one user. nibrunner/layer, nibrunner/volume and the VMMs satisfy
// them; adapters.go has the simple ones the loop needs to run end to end
// where the real component is not wired yet.

// Layers makes an instance's layers ready to attach (*layer.Cache).
type Layers interface {
	PrepareAll(ctx context.Context, specs []layer.Spec) ([]layer.Image, error)
}

// VolumeInfo is a volume as it is on the host.
type VolumeInfo = volume.Info

// Volumes keeps apps' writable disks (*volume.Local).
type Volumes interface {
	// List returns every volume on the host by id.
	List(ctx context.Context) (map[string]VolumeInfo, error)
	// Converge makes a volume what spec asks: made, grown or deleted.
	Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error)
	// Path is the file or device volume id lives in.
	Path(id string) string
}

// VolumeUsage is what a Volumes may also do: measure a volume's fill
// (volume.Local reads the ext4 superblock). The daemon reports it when
// the backend can.
type VolumeUsage interface {
	Usage(ctx context.Context, id string) (volume.Usage, error)
}

// VolumeSpace is what a Volumes may also do: say the free space of the
// disk its volumes are made on (volume.Local and volume.Files statfs their
// folder). The planner admits volumes against it, as it admits guests
// against memory; without it no volume is held back for room.
type VolumeSpace interface {
	FreeBytes(ctx context.Context) (uint64, error)
}

// Network renders and applies the host's whole ruleset (taps, addresses,
// the nftables table) from every app with a slot at once; network.Host is
// the production one. The daemon calls it only when the apps change, and
// starts nothing until it has succeeded once.
type Network interface {
	Apply(ctx context.Context, apps []network.App) error
}

// Router holds the HTTP proxy's routing table (route.Router); Apply
// replaces it whole.
type Router = route.Router

// CheckpointInfo is a checkpoint that exists.
type CheckpointInfo = checkpoint.Info

// Checkpoints makes and deletes point-in-time copies of volumes
// (*checkpoint.Store). Its calls run in the background (background.go),
// never inside a pass.
type Checkpoints interface {
	List(ctx context.Context) (map[string]CheckpointInfo, error)
	// Create copies vol as checkpoint id. It may take minutes (a freeze,
	// a copy, an upload).
	Create(ctx context.Context, id string, vol checkpoint.Volume) (CheckpointInfo, error)
	Delete(ctx context.Context, id string) error
}

// Travel moves an on-request app's memory snapshot through the stores,
// beside its volume's checkpoint (qemu.Travel; docs/fleet.md): sent with a
// checkpoint of the volume of an app asleep, fetched when a volume is
// restored from a checkpoint, so the app wakes there where it fell asleep.
type Travel interface {
	// SavedAt is when the app's snapshot was saved (Unix ms), 0 for none.
	SavedAt(app string) int64
	// Send puts the snapshot saved at savedAtMs beside the checkpoint at
	// checkpointKey and returns the bytes sent (0 when the app has none);
	// another snapshot is an error.
	Send(ctx context.Context, app string, savedAtMs int64, checkpointKey string) (int64, error)
	// Fetch makes the snapshot beside the checkpoint at objectKey the
	// app's and returns its deployment ("" when there is none), and the
	// bytes fetched. One this host could never restore is an error that
	// says why.
	Fetch(ctx context.Context, app, objectKey string) (deployment string, n int64, err error)
	// Forget deletes the snapshot beside the checkpoint at checkpointKey.
	Forget(ctx context.Context, checkpointKey string) error
}

// Schedule takes checkpoints of the host's volumes on a schedule of its
// own (*schedule.Schedule): a component the daemon's manager runs, which
// reads the host through the daemon (Run) and whose checkpoints the
// report lists under each volume (Taken).
type Schedule interface {
	Run(ctx context.Context, h schedule.Host) error
	Taken(volumeID string) []schedule.Taken
}

// ExportInfo is an export that was written.
type ExportInfo = export.Info

// Exports writes volumes out as gzipped tars to the exports store
// (*export.Writer), in the background like checkpoints.
type Exports interface {
	List(ctx context.Context) (map[string]ExportInfo, error)
	// Write reads vol (freezing its guest while it copies) and streams
	// the archive e asks for to the exports store.
	Write(ctx context.Context, e desired.DesiredExport, vol checkpoint.Volume) (ExportInfo, error)
	Forget(ctx context.Context, id string) error
}

// Traffic tells the planner when an app last saw a request (the HTTP
// proxy measures it). busy: a request or stream is open now.
type Traffic interface {
	Activity(app string) (last time.Time, busy bool)
}
