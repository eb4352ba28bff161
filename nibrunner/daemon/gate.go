package daemon

import (
	"context"
	"sync"
)

// gate bounds how many VMM operations (starts, wakes, stops, sleeps) are in
// flight at once: max_concurrent_vm_starts. A wake goes to the head of the
// queue, because a request is waiting on it; everything else waits its
// turn in order.
type gate struct {
	// mu guards the count and the queues; it is a leaf, never held while
	// a turn is waited for or an operation runs.
	mu     sync.Mutex
	free   int
	urgent []chan struct{}
	normal []chan struct{}
}

func newGate(n int) *gate { return &gate{free: max(n, 1)} }

// acquire waits for a turn (urgent ones first) or for ctx to end.
func (g *gate) acquire(ctx context.Context, urgent bool) error {
	g.mu.Lock()
	if g.free > 0 && len(g.urgent) == 0 && (urgent || len(g.normal) == 0) {
		g.free--
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	if urgent {
		g.urgent = append(g.urgent, turn)
	} else {
		g.normal = append(g.normal, turn)
	}
	g.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-turn:
			// Handed a turn as ctx ended: pass it on.
			g.releaseLocked()
		default:
			g.urgent = without(g.urgent, turn)
			g.normal = without(g.normal, turn)
		}
		return ctx.Err()
	}
}

// release ends a turn.
func (g *gate) release() {
	g.mu.Lock()
	g.releaseLocked()
	g.mu.Unlock()
}

func (g *gate) releaseLocked() {
	switch {
	case len(g.urgent) > 0:
		close(g.urgent[0])
		g.urgent = g.urgent[1:]
	case len(g.normal) > 0:
		close(g.normal[0])
		g.normal = g.normal[1:]
	default:
		g.free++
	}
}

func without(q []chan struct{}, c chan struct{}) []chan struct{} {
	for i, x := range q {
		if x == c {
			return append(q[:i], q[i+1:]...)
		}
	}
	return q
}
