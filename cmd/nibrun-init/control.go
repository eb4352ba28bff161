package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
)

// control is the guest's end of the virtio-serial control port.
//
// A write to the port blocks while no host is connected (the daemon may be
// restarting), so messages go through a bounded queue drained by one writer;
// when the queue is full new log chunks are dropped rather than stalling the
// tenant. A read returns end-of-file while no host is connected, so the
// reader waits and tries again.
type control struct {
	f       *os.File
	enc     *guest.Encoder
	q       chan guest.Message
	dropped atomic.Int64

	// freezeMu orders freezes, thaws and the automatic thaw of a freeze
	// whose bound passed.
	freezeMu sync.Mutex
	autoThaw *time.Timer

	// execs serves exec sessions; their frames come only from this port.
	execs *execServer
}

// sendExec writes one exec frame at once, past the queue: a session's
// frames must not be dropped, and its credit already bounds how many wait.
// It blocks while the host does not read, which holds that session alone.
func (c *control) sendExec(frame []byte) error {
	return c.enc.Send(guest.Message{Kind: guest.KindExec, Frame: frame})
}

// findControlPort returns the device of the virtio-serial port named
// nibrun.control.
func findControlPort() (string, error) {
	names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil && strings.TrimSpace(string(b)) == guest.ControlPortName {
			return "/dev/" + filepath.Base(filepath.Dir(n)), nil
		}
	}
	return "", errors.New("no virtio-serial port named " + guest.ControlPortName)
}

func openControl(timeout time.Duration) (*control, error) {
	deadline := time.Now().Add(timeout)
	for {
		dev, err := findControlPort()
		if err == nil {
			f, err := os.OpenFile(dev, os.O_RDWR, 0)
			if err == nil {
				c := &control{f: f, enc: guest.NewEncoder(f), q: make(chan guest.Message, 4096)}
				go c.writer()
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *control) writer() {
	for m := range c.q {
		_ = c.enc.Send(m)
	}
}

// send queues m without ever blocking the tenant's supervisor: when the
// queue is full (no host has read it for a while) a log chunk is dropped,
// and anything else makes room by dropping the oldest queued message.
func (c *control) send(m guest.Message) {
	for {
		select {
		case c.q <- m:
			return
		default:
		}
		if m.Kind == guest.KindLog {
			c.dropped.Add(1)
			return
		}
		select {
		case <-c.q:
			c.dropped.Add(1)
		default:
		}
	}
}

// flush waits up to timeout for the queue to drain.
func (c *control) flush(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for len(c.q) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the last message may be mid-write
}

// handle serves the host's requests until the machine stops.
func (c *control) handle(s *supervisor) {
	go func() {
		dec := guest.NewDecoder(c.f)
		for {
			m, err := dec.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					logf("control port: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if m.Kind == guest.KindExec {
				if c.execs != nil {
					c.execs.frame(m.Frame)
				}
				continue
			}
			c.send(c.answer(s, m))
		}
	}()
}

// FIFREEZE and FITHAW are _IOWR('X', 119, int) and _IOWR('X', 120, int).
const (
	fiFreeze = 0xC0045877
	fiThaw   = 0xC0045878
)

func (c *control) answer(s *supervisor, m guest.Message) guest.Message {
	r := guest.Message{Kind: guest.KindReply, ID: m.ID}
	var err error
	switch m.Kind {
	case guest.KindPing:
	case guest.KindFreeze:
		err = c.freeze(m.TimeoutMs)
	case guest.KindThaw:
		err = c.thaw()
	case guest.KindMeasure:
		var ms guest.Measurement
		ms, err = measure()
		r.Measurement = &ms
	case guest.KindSetTime:
		tv := unix.NsecToTimeval(m.UnixMs * int64(time.Millisecond))
		err = unix.Settimeofday(&tv)
	case guest.KindSetNetwork:
		err = setNetwork(m.Network)
	case guest.KindShutdown:
		s.stop()
	default:
		err = fmt.Errorf("unknown request %q", m.Kind)
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// freeze freezes the volume for at most timeoutMs: a timer thaws it unless
// a thaw comes first, so a host that died mid-checkpoint never leaves the
// tenant's writes waiting for longer than the bound it asked for.
func (c *control) freeze(timeoutMs int64) error {
	if timeoutMs <= 0 {
		timeoutMs = guest.DefaultFreezeTimeoutMs
	}
	c.freezeMu.Lock()
	defer c.freezeMu.Unlock()
	if err := ioctlVolume(fiFreeze); err != nil {
		return err
	}
	if c.autoThaw != nil {
		c.autoThaw.Stop()
	}
	c.autoThaw = time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() {
		c.freezeMu.Lock()
		defer c.freezeMu.Unlock()
		if err := thawVolume(); err != nil {
			logf("thaw the volume after the freeze's %d ms bound: %v", timeoutMs, err)
		} else {
			logf("thawed the volume: no thaw came within the freeze's %d ms bound", timeoutMs)
		}
	})
	return nil
}

// thaw thaws the volume and cancels the pending automatic thaw.
func (c *control) thaw() error {
	c.freezeMu.Lock()
	defer c.freezeMu.Unlock()
	if c.autoThaw != nil {
		c.autoThaw.Stop()
		c.autoThaw = nil
	}
	return thawVolume()
}

// thawVolume is FITHAW, which fails with EINVAL on a filesystem that is not
// frozen: that is a thaw already done.
func thawVolume() error {
	err := ioctlVolume(fiThaw)
	if errors.Is(err, unix.EINVAL) {
		return nil
	}
	return err
}

func ioctlVolume(req uint) error {
	f, err := os.Open(mntVolume)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), req, 0); err != nil {
		return fmt.Errorf("ioctl on the volume: %w", err)
	}
	return nil
}
