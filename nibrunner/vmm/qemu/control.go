package qemu

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/perm"
)

// control is the host's end of a guest's control channel: QEMU listens on a
// unix socket that carries the virtio-serial port, and the daemon connects
// to it (so a restarted daemon connects again). It sends requests, matches
// replies by id, and hands every other message to onMessage.
type control struct {
	path      string
	onMessage func(guest.Message)
	refused   bool // the last dial was refused (and logged); run's own

	mu      sync.Mutex
	conn    net.Conn
	enc     *guest.Encoder
	next    atomic.Uint64
	pending sync.Map // id -> chan guest.Message
	closed  chan struct{}
	once    sync.Once

	// execs are the exec sessions open in the guest, by session id
	// (exec.go); nextExec numbers them.
	execs    sync.Map // uint32 -> *execStream
	nextExec atomic.Uint32
}

func newControl(path string, onMessage func(guest.Message)) *control {
	c := &control{path: path, onMessage: onMessage, closed: make(chan struct{})}
	// Ids start apart from a previous daemon's, whose sessions the guest
	// may still report (onExec closes those).
	c.nextExec.Store(uint32(time.Now().UnixNano() >> 10))
	return c
}

// run keeps the connection up until close: QEMU's socket is there for the
// life of the process, and the guest's writes block while nobody reads.
func (c *control) run() {
	for {
		select {
		case <-c.closed:
			return
		default:
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := dialSocket(dctx, c.path)
		cancel()
		if err != nil {
			if errors.Is(err, perm.ErrUnsafe) && !c.refused {
				log.Printf("nibrunnerd: control channel: %v", err)
			}
			c.refused = errors.Is(err, perm.ErrUnsafe)
			select {
			case <-c.closed:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		c.mu.Lock()
		c.conn, c.enc = conn, guest.NewEncoder(conn)
		c.mu.Unlock()
		dec := guest.NewDecoder(conn)
		for {
			m, err := dec.Next()
			if err != nil {
				break
			}
			if m.Kind == guest.KindExec {
				c.onExec(m.Frame)
				continue
			}
			if m.Kind == guest.KindReply {
				if ch, ok := c.pending.LoadAndDelete(m.ID); ok {
					ch.(chan guest.Message) <- m
				}
				continue
			}
			if c.onMessage != nil {
				c.onMessage(m)
			}
		}
		c.mu.Lock()
		c.conn, c.enc = nil, nil
		c.mu.Unlock()
		conn.Close()
		c.lostExecs()
	}
}

func (c *control) close() {
	c.once.Do(func() { close(c.closed) })
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Close()
	}
	c.mu.Unlock()
}

// errNoControl says the guest's control channel is not connected.
var errNoControl = errors.New("the guest's control channel is not connected")

// request sends m and waits for the guest's reply (resending never: a
// request lost in a reconnect times out instead).
func (c *control) request(ctx context.Context, m guest.Message) (guest.Message, error) {
	m.ID = c.next.Add(1)
	ch := make(chan guest.Message, 1)
	c.pending.Store(m.ID, ch)
	defer c.pending.Delete(m.ID)
	for {
		c.mu.Lock()
		enc := c.enc
		c.mu.Unlock()
		if enc != nil {
			if err := enc.Send(m); err != nil {
				return guest.Message{}, err
			}
			break
		}
		select {
		case <-ctx.Done():
			return guest.Message{}, fmt.Errorf("%s: %w", m.Kind, errNoControl)
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case r := <-ch:
		if r.Error != "" {
			return r, fmt.Errorf("guest refused %s: %s", m.Kind, r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return guest.Message{}, fmt.Errorf("guest did not answer %s: %w", m.Kind, ctx.Err())
	}
}
