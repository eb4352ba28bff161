// Package volumetest holds what tests of volume seeding share: an artifact
// store whose reads stop partway until the test lets them go on, so a test
// can hold a seed in the middle of its fetch for as long as it needs (past a
// pass's budget, across a restart) and then let it finish.
package volumetest

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"alpnib.dev/nibrunner/store"
)

// Gated is a store whose Gets deliver the first After bytes of an object
// and then wait until Release is called (or the reader's context ends,
// which they return as the error). Everything else goes to Store.
type Gated struct {
	store.Store
	After int64

	// Gets counts the Gets.
	Gets atomic.Int64

	once     sync.Once
	release  chan struct{}
	blocked  chan struct{}
	blockOne sync.Once
	// Cancelled counts the reads that ended because their context did.
	Cancelled atomic.Int64
}

func (g *Gated) init() {
	g.once.Do(func() {
		g.release = make(chan struct{})
		g.blocked = make(chan struct{})
	})
}

// Release lets every read held at After, and every later one, go on.
func (g *Gated) Release() {
	g.init()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// Blocked is closed once a read has reached After and waits.
func (g *Gated) Blocked() <-chan struct{} {
	g.init()
	return g.blocked
}

// Get opens the object and holds its reader at After.
func (g *Gated) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	g.init()
	g.Gets.Add(1)
	r, n, err := g.Store.Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	return &gatedReader{g: g, ctx: ctx, r: r}, n, nil
}

type gatedReader struct {
	g   *Gated
	ctx context.Context
	r   io.ReadCloser
	n   int64
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if r.n >= r.g.After {
		select {
		case <-r.g.release:
		default:
			r.g.blockOne.Do(func() { close(r.g.blocked) })
			select {
			case <-r.g.release:
			case <-r.ctx.Done():
				r.g.Cancelled.Add(1)
				return 0, r.ctx.Err()
			}
		}
	} else if left := r.g.After - r.n; int64(len(p)) > left {
		p = p[:left]
	}
	k, err := r.r.Read(p)
	r.n += int64(k)
	return k, err
}

func (r *gatedReader) Close() error { return r.r.Close() }
