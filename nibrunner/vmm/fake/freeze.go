package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

var _ vmm.Freezer = (*VMM)(nil)

// A fake guest has no filesystem of its own, so a freeze only records
// itself: tests read Freezes and Frozen to see that a checkpoint of a
// running app froze it for the copy and thawed it after.

type freezes struct {
	mu     sync.Mutex
	frozen map[string]time.Time // app -> when its bound passes
	count  map[string]int
}

func (v *VMM) freezes() *freezes {
	f := &v.frz
	f.mu.Lock()
	if f.frozen == nil {
		f.frozen, f.count = map[string]time.Time{}, map[string]int{}
	}
	f.mu.Unlock()
	return f
}

// FreezeVolume records a freeze of app's volume until ctx's deadline
// (10 s without one), the bound the real guest's init keeps; a volume
// frozen already is refused (vmm.ErrFreezeRefused), as the init refuses.
func (v *VMM) FreezeVolume(ctx context.Context, app string) error {
	if _, _, ok := v.running(app); !ok {
		return fmt.Errorf("freeze the volume of %s: %w", app, vmm.ErrNotFound)
	}
	until := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok {
		until = dl
	}
	f := v.freezes()
	f.mu.Lock()
	defer f.mu.Unlock()
	if held, ok := f.frozen[app]; ok && time.Now().Before(held) {
		// As the guest's init refuses a second FIFREEZE (EBUSY).
		return fmt.Errorf("freeze the volume of %s: %w: it is frozen already", app, vmm.ErrFreezeRefused)
	}
	f.frozen[app] = until
	f.count[app]++
	return nil
}

// ThawVolume ends a freeze of app's volume, if there is one.
func (v *VMM) ThawVolume(ctx context.Context, app string) error {
	f := v.freezes()
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.frozen, app)
	return nil
}

// Frozen reports whether app's volume is frozen now.
func (v *VMM) Frozen(app string) bool {
	f := v.freezes()
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.frozen[app]
	return ok && time.Now().Before(until)
}

// Freezes counts the freezes of app's volume so far.
func (v *VMM) Freezes(app string) int {
	f := v.freezes()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count[app]
}
