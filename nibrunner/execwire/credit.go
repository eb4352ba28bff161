package execwire

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrClosed reports a Credit closed while a sender waited on it.
var ErrClosed = errors.New("exec stream closed")

// Credit is the sender's side of one stream's window: the bytes it may
// still send. Take blocks while none are left; Grant adds what the
// receiver's Window frames return.
type Credit struct {
	mu     sync.Mutex
	avail  int64
	closed bool
	more   chan struct{} // closed and replaced on every Grant or Close
}

// NewCredit starts with the initial window the receiver promised.
func NewCredit(initial uint32) *Credit {
	return &Credit{avail: int64(initial), more: make(chan struct{})}
}

// Take reserves up to want bytes, at least one, waiting for a grant while
// none are left. It returns how many the caller may send.
func (c *Credit) Take(ctx context.Context, want int) (int, error) {
	if want <= 0 {
		return 0, nil
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return 0, ErrClosed
		}
		if c.avail > 0 {
			n := int64(want)
			if n > c.avail {
				n = c.avail
			}
			c.avail -= n
			c.mu.Unlock()
			return int(n), nil
		}
		more := c.more
		c.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Grant adds n bytes of credit. Credit beyond MaxWindow is the peer
// breaking the protocol, and is refused.
func (c *Credit) Grant(n uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		// The stream ended while the peer's window was on its way: its
		// channel is closed and stays so (closing it again would panic).
		return nil
	}
	if c.avail+int64(n) > MaxWindow {
		return fmt.Errorf("%w: a grant of %d bytes would leave %d outstanding, more than %d", ErrFrame, n, c.avail+int64(n), MaxWindow)
	}
	c.avail += int64(n)
	close(c.more)
	c.more = make(chan struct{})
	return nil
}

// Close wakes every waiter with ErrClosed.
func (c *Credit) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.more)
	}
}

// Window is the receiver's side of one stream: it holds the sender to the
// credit granted and says when consumed bytes are worth granting back.
type Window struct {
	size     uint32
	owed     int64 // granted and not yet received
	consumed uint32
}

// NewWindow is a receiver window of size bytes (the sender's initial
// credit).
func NewWindow(size uint32) *Window { return &Window{size: size, owed: int64(size)} }

// Received accounts n bytes that arrived. More than was granted is the
// sender breaking the protocol: a receiver must not buffer it.
func (w *Window) Received(n int) error {
	if int64(n) > w.owed {
		return fmt.Errorf("%w: %d bytes arrived with only %d granted", ErrFrame, n, w.owed)
	}
	w.owed -= int64(n)
	return nil
}

// Consumed accounts n bytes handed on to the reader and returns the
// credit to grant now: nothing until half a window has been consumed, so
// grants come in few frames.
func (w *Window) Consumed(n int) uint32 {
	w.consumed += uint32(n)
	if w.consumed < w.size/2 {
		return 0
	}
	g := w.consumed
	w.consumed = 0
	w.owed += int64(g)
	return g
}
