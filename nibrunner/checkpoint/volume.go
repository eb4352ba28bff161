// Package checkpoint makes point-in-time copies of apps' volumes.
//
// This file is the seam between the daemon and the packages that read a
// volume while its app may be running (checkpoints here, exports in
// nibrunner/export): the daemon says which file holds the volume and, when
// a guest has it mounted, hands over that guest's freezer. Whoever reads
// the volume freezes it first and always thaws it.
package checkpoint

import "context"

// Freezer quiesces the filesystem of the guest that has a volume mounted
// (nibrun-init's FIFREEZE and FITHAW). A Thaw must follow every Freeze that
// succeeded, whatever happens in between.
type Freezer interface {
	Freeze(ctx context.Context) error
	Thaw(ctx context.Context) error
}

// Volume is the volume a checkpoint or an export reads.
type Volume struct {
	ID string
	// Path is the file the volume lives in on the host.
	Path string
	// Freezer is the running guest that has the volume mounted, or nil
	// when none has (its app sleeps, is stopped, or has no guest): the
	// file is then at rest and needs no freeze.
	Freezer Freezer
	// AtRest, when set beside a nil Freezer, is asked after the copy
	// whether the volume stayed at rest through it: an error (its app's
	// guest started meanwhile) fails the copy, which may be torn, and the
	// next try freezes the guest instead.
	AtRest func(ctx context.Context) error
}
