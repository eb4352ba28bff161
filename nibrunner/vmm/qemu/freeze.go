package qemu

import (
	"context"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/vmm"
)

var _ vmm.Freezer = (*VMM)(nil)

// FreezeVolume asks the guest's init to freeze the filesystem on the app's
// volume (FIFREEZE). The freeze is bounded by ctx's deadline (else
// guest.DefaultFreezeTimeoutMs): the request carries what is left of it,
// and the init thaws by itself once that has passed without a thaw.
func (v *VMM) FreezeVolume(ctx context.Context, app string) error {
	g, err := v.live(app)
	if err != nil {
		return fmt.Errorf("freeze the volume of %s: %w", app, err)
	}
	bound := int64(guest.DefaultFreezeTimeoutMs)
	if dl, ok := ctx.Deadline(); ok {
		bound = max(time.Until(dl).Milliseconds(), 1)
	}
	if _, err := g.ctl.request(ctx, guest.Message{Kind: guest.KindFreeze, TimeoutMs: bound}); err != nil {
		return fmt.Errorf("freeze the volume of %s: %w", app, err)
	}
	return nil
}

// ThawVolume asks the guest's init to thaw the app's volume (FITHAW); a
// volume that is not frozen is left as it is.
func (v *VMM) ThawVolume(ctx context.Context, app string) error {
	g, err := v.live(app)
	if err != nil {
		return fmt.Errorf("thaw the volume of %s: %w", app, err)
	}
	if _, err := g.ctl.request(ctx, guest.Message{Kind: guest.KindThaw}); err != nil {
		return fmt.Errorf("thaw the volume of %s: %w", app, err)
	}
	return nil
}
