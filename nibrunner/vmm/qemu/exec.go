package qemu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"alpnib.dev/nibrunner/execwire"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/vmm"
)

var _ vmm.Execer = (*VMM)(nil)

// Exec opens an exec session in app's live guest. The guest answers a
// program it cannot start with an exit frame (126 or 127) and its
// sentence, which the stream's Recv returns.
func (v *VMM) Exec(ctx context.Context, app string, spec execwire.Spec) (vmm.ExecStream, error) {
	g, err := v.live(app)
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", app, err)
	}
	s, err := g.ctl.openExec(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", app, err)
	}
	return s, nil
}

// maxQueuedExec bounds what one session holds on the host while its
// reader is slow: the guest may have two streams' worth of granted
// credit in flight, plus a few control frames. A guest that sends more
// broke the protocol, and loses the session.
const maxQueuedExec = 2*execwire.MaxWindow + 64<<10

// execStream is the host's end of one exec session. Frames from the guest
// arrive on the control channel's one reader, which must never wait on a
// client: they are queued here, bounded by the credit the client granted.
type execStream struct {
	c  *control
	id uint32

	mu     sync.Mutex
	queue  []queuedFrame
	queued int
	err    error         // set once: the session ended without an exit
	done   bool          // the exit frame was queued
	more   chan struct{} // 1-buffered
	once   sync.Once
}

type queuedFrame struct {
	t       execwire.Type
	payload []byte
}

// errExecLost says the control channel went away under a session.
var errExecLost = errors.New("the guest's control channel closed during the exec; the program's fate is unknown")

func (c *control) openExec(ctx context.Context, spec execwire.Spec) (*execStream, error) {
	p, err := execwire.AppendSpec(nil, spec)
	if err != nil {
		return nil, err
	}
	s := &execStream{c: c, id: c.nextExec.Add(1), more: make(chan struct{}, 1)}
	c.execs.Store(s.id, s)
	if err := c.sendExecFrame(ctx, execwire.TypeOpen, s.id, p); err != nil {
		c.execs.Delete(s.id)
		return nil, err
	}
	return s, nil
}

// sendExecFrame sends one frame, waiting (within ctx) for a connection.
func (c *control) sendExecFrame(ctx context.Context, t execwire.Type, id uint32, payload []byte) error {
	b, err := execwire.AppendFrame(nil, t, id, payload)
	if err != nil {
		return err
	}
	for {
		c.mu.Lock()
		enc := c.enc
		c.mu.Unlock()
		if enc != nil {
			return enc.Send(guest.Message{Kind: guest.KindExec, Frame: b})
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("exec %s: %w", t, errNoControl)
		case <-c.closed:
			return fmt.Errorf("exec %s: %w", t, errNoControl)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// onExec routes one frame from the guest. A frame of a session this
// process does not know (one a previous daemon opened) is answered with
// a close, so the guest stops a program nobody reads.
func (c *control) onExec(b []byte) {
	f, err := execwire.ParseFrame(b)
	if err != nil {
		return
	}
	v, ok := c.execs.Load(f.Session)
	if !ok {
		if f.Type != execwire.TypeExit {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = c.sendExecFrame(ctx, execwire.TypeClose, f.Session, nil)
			}()
		}
		return
	}
	s := v.(*execStream)
	if f.Type == execwire.TypeExit {
		c.execs.Delete(f.Session)
	}
	if !s.push(f.Type, append([]byte(nil), f.Payload...)) {
		c.execs.Delete(f.Session)
		go func() { _ = s.Close() }()
	}
}

// lostExecs ends every session when the connection drops.
func (c *control) lostExecs() {
	c.execs.Range(func(k, v any) bool {
		c.execs.Delete(k)
		v.(*execStream).fail(errExecLost)
		return true
	})
}

// push queues a frame; false when the guest overran the bound.
func (s *execStream) push(t execwire.Type, p []byte) bool {
	s.mu.Lock()
	if s.queued+len(p) > maxQueuedExec {
		s.mu.Unlock()
		s.fail(fmt.Errorf("the guest sent more than the %d bytes the session may hold", maxQueuedExec))
		return false
	}
	s.queue = append(s.queue, queuedFrame{t, p})
	s.queued += len(p)
	if t == execwire.TypeExit {
		s.done = true
	}
	s.mu.Unlock()
	s.notify()
	return true
}

func (s *execStream) notify() {
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *execStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil && !s.done {
		s.err = err
	}
	s.mu.Unlock()
	s.notify()
}

// Recv returns the next frame from the guest.
func (s *execStream) Recv(ctx context.Context) (execwire.Type, []byte, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			f := s.queue[0]
			s.queue[0] = queuedFrame{}
			s.queue = s.queue[1:]
			s.queued -= len(f.payload)
			s.mu.Unlock()
			return f.t, f.payload, nil
		}
		err := s.err
		s.mu.Unlock()
		if err != nil {
			return 0, nil, err
		}
		select {
		case <-s.more:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

// Send sends one frame to the guest's program.
func (s *execStream) Send(t execwire.Type, payload []byte) error {
	if t == execwire.TypeOpen || t == execwire.TypeExit {
		return fmt.Errorf("an exec client does not send %s frames", t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.c.sendExecFrame(ctx, t, s.id, payload)
}

// Close abandons the session unless it has ended: the guest kills the
// program, and any frame of it still arriving is dropped.
func (s *execStream) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		s.c.execs.Delete(s.id)
		s.fail(errors.New("the exec session was closed"))
		if !done {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = s.c.sendExecFrame(ctx, execwire.TypeClose, s.id, nil)
		}
	})
	return err
}
