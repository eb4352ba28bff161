package qemu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/vmm"
)

var _ vmm.Freezer = (*VMM)(nil)

// FreezeVolume asks the guest's init to freeze the filesystem on the app's
// volume (FIFREEZE). The freeze is bounded by ctx's deadline (else
// guest.DefaultFreezeTimeoutMs): the request carries what is left of it,
// and the init thaws by itself once that has passed without a thaw. A
// freeze the guest refused, or one asked while a sleep or another
// checkpoint holds the volume frozen, wraps vmm.ErrFreezeRefused.
func (v *VMM) FreezeVolume(ctx context.Context, app string) error {
	g, err := v.live(app)
	if err != nil {
		return fmt.Errorf("freeze the volume of %s: %w", app, err)
	}
	bound := int64(guest.DefaultFreezeTimeoutMs)
	if dl, ok := ctx.Deadline(); ok {
		bound = max(time.Until(dl).Milliseconds(), 1)
	}
	if err := g.freeze(ctx, bound); err != nil {
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
	if err := g.thaw(ctx); err != nil {
		return fmt.Errorf("thaw the volume of %s: %w", app, err)
	}
	return nil
}

// errFreezeHeld says a freeze this process asked for holds the volume.
var errFreezeHeld = errors.New("another freeze of it (a sleep's or a checkpoint's) is under way; it is tried again later")

// freeze asks g's init to freeze the volume for boundMs of the guest's
// time, unless a freeze this process asked for holds it already: a second
// FIFREEZE would be refused anyway, and its caller's thaw would end the
// first one's. A freeze that was sent but not answered keeps the hold: it
// may have happened, and the caller's thaw releases it.
func (g *vmGuest) freeze(ctx context.Context, boundMs int64) error {
	if !g.freezeHeld.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %w", vmm.ErrFreezeRefused, errFreezeHeld)
	}
	r, err := g.ctl.request(ctx, guest.Message{Kind: guest.KindFreeze, TimeoutMs: boundMs})
	if err != nil && r.Error != "" {
		g.freezeHeld.Store(false)
		return fmt.Errorf("%w: %w", vmm.ErrFreezeRefused, err)
	}
	return err
}

// thaw asks g's init to thaw the volume and releases the hold of freeze.
// A thaw that goes unanswered releases it too: the init thaws by itself
// at its bound.
func (g *vmGuest) thaw(ctx context.Context) error {
	_, err := g.ctl.request(ctx, guest.Message{Kind: guest.KindThaw})
	g.freezeHeld.Store(false)
	return err
}
