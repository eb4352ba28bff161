package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/perm"
)

// qmp is a small client for QEMU's machine protocol over a unix socket:
// read the greeting, negotiate capabilities, then execute commands one at a
// time, matching answers by id while events stream past. Only what this
// package needs; no dependency on a third-party QMP library.
type qmp struct {
	conn net.Conn
	mu   sync.Mutex // one command in flight
	next uint64

	pending sync.Map // id -> chan qmpReply
	events  chan qmpEvent
	done    chan struct{}
	err     error
}

type qmpReply struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
	ID    *uint64         `json:"id"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

type qmpEvent struct {
	Name string
	Data json.RawMessage
}

// dialQMP connects to the socket, retrying until ctx ends: QEMU creates it
// a moment after its process starts.
func dialQMP(ctx context.Context, path string) (*qmp, error) {
	var conn net.Conn
	for {
		var err error
		conn, err = dialSocket(ctx, path)
		if err == nil {
			break
		}
		if errors.Is(err, perm.ErrUnsafe) {
			return nil, fmt.Errorf("connect to QMP: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to QMP at %s: %w", path, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	q := &qmp{conn: conn, events: make(chan qmpEvent, 64), done: make(chan struct{})}
	r := bufio.NewReaderSize(conn, 64<<10)
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	greeting, err := r.ReadBytes('\n')
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("read QMP greeting: %w", err)
	}
	var g struct {
		QMP json.RawMessage `json:"QMP"`
	}
	if json.Unmarshal(greeting, &g) != nil || g.QMP == nil {
		conn.Close()
		return nil, fmt.Errorf("QMP greeting %q is not one", greeting)
	}
	go q.read(r)
	if _, err := q.execute(ctx, "qmp_capabilities", nil); err != nil {
		q.close()
		return nil, err
	}
	return q, nil
}

func (q *qmp) read(r *bufio.Reader) {
	defer close(q.done)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			q.err = err
			return
		}
		var m qmpReply
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Event != "" {
			select {
			case q.events <- qmpEvent{m.Event, m.Data}:
			default: // nobody is listening; events are hints, not state
			}
			continue
		}
		if m.ID != nil {
			if ch, ok := q.pending.LoadAndDelete(*m.ID); ok {
				ch.(chan qmpReply) <- m
			}
		}
	}
}

// errQMPClosed says QEMU went away while a command was in flight.
var errQMPClosed = errors.New("QMP connection closed")

// execute runs one command and returns its "return" value.
func (q *qmp) execute(ctx context.Context, cmd string, args any) (json.RawMessage, error) {
	return q.executeWith(ctx, cmd, args, nil)
}

// sendFile hands QEMU f under name (QMP getfd, the file passed with
// SCM_RIGHTS on the command's own write), for a later command to use as
// fd:name.
func (q *qmp) sendFile(ctx context.Context, name string, f *os.File) error {
	_, err := q.executeWith(ctx, "getfd", map[string]any{"fdname": name}, f)
	return err
}

func (q *qmp) executeWith(ctx context.Context, cmd string, args any, f *os.File) (json.RawMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next++
	id := q.next
	ch := make(chan qmpReply, 1)
	q.pending.Store(id, ch)
	defer q.pending.Delete(id)
	req := map[string]any{"execute": cmd, "id": id}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	dl, _ := ctx.Deadline() // zero (no deadline) clears an earlier call's
	_ = q.conn.SetWriteDeadline(dl)
	if f == nil {
		_, err := q.conn.Write(append(b, '\n'))
		if err != nil {
			return nil, fmt.Errorf("QMP %s: %w", cmd, err)
		}
	} else {
		uc, ok := q.conn.(*net.UnixConn)
		if !ok {
			return nil, fmt.Errorf("QMP %s: files pass over unix sockets only", cmd)
		}
		if _, _, err := uc.WriteMsgUnix(append(b, '\n'), unix.UnixRights(int(f.Fd())), nil); err != nil {
			return nil, fmt.Errorf("QMP %s: %w", cmd, err)
		}
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("QMP %s: %s: %s", cmd, r.Error.Class, r.Error.Desc)
		}
		return r.Return, nil
	case <-q.done:
		return nil, fmt.Errorf("QMP %s: %w", cmd, errQMPClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("QMP %s: %w", cmd, ctx.Err())
	}
}

// status returns the run state (running, paused, inmigrate, postmigrate…).
func (q *qmp) status(ctx context.Context) (string, error) {
	b, err := q.execute(ctx, "query-status", nil)
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("decode query-status: %w", err)
	}
	return s.Status, nil
}

func (q *qmp) close() { q.conn.Close() }
