package checkpoint

import (
	"context"
	"sync"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

// Guests is what ThawRunning needs of a VMM: its guests and their freezer.
type Guests interface {
	List(ctx context.Context) ([]vmm.Status, error)
	vmm.Freezer
}

// ThawRunning thaws the volume of every running guest, all at once, and
// returns when each has answered or timeout has passed. A daemon that
// died while a checkpoint had a guest frozen leaves it so until the
// guest's own bound passes, and the tenant's writes wait meanwhile; the
// next daemon calls this as it starts. Thawing a filesystem that is not
// frozen does nothing. It returns the apps whose thaw failed, with why.
func ThawRunning(ctx context.Context, g Guests, timeout time.Duration) map[string]error {
	list, err := g.List(ctx)
	if err != nil {
		return map[string]error{"": err}
	}
	var mu sync.Mutex
	failed := map[string]error{}
	var wg sync.WaitGroup
	for _, st := range list {
		if st.State != vmm.Running {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := g.ThawVolume(tctx, st.AppID); err != nil {
				mu.Lock()
				failed[st.AppID] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}
