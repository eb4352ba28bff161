package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"alpnib.dev/nibrunner/execwire"
)

// ExecIO is the client's end of an exec session's streams.
type ExecIO struct {
	// Stdin is sent when the request asked for it (nil: none).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Resize carries the terminal's new rows and columns (-t); Signal
	// signal numbers to deliver to the program.
	Resize <-chan [2]uint16
	Signal <-chan int
}

// ErrExecLost is RunExec's error when the connection ended before the
// program's exit status came.
var ErrExecLost = errors.New("the exec session ended before the program's exit status arrived")

// RunExec speaks the exec protocol on conn (Client.Exec's connection)
// until the program's exit frame: it sends stdin as the guest grants
// credit, writes stdout and stderr as they come and grants credit back
// only once they are written, so a slow writer holds the program back
// instead of growing anyone's memory. It closes conn. When ctx ends the
// session is closed, and the guest kills the program.
func RunExec(ctx context.Context, conn io.ReadWriteCloser, sio ExecIO) (execwire.Exit, error) {
	defer conn.Close()
	var wmu sync.Mutex
	send := func(t execwire.Type, payload []byte) error {
		b, err := execwire.AppendFrame(nil, t, 0, payload)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, err = conn.Write(b)
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdinCredit := execwire.NewCredit(execwire.DefaultWindow)
	defer stdinCredit.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if sio.Stdin != nil {
		// Not waited for: it may sit in a Read of a terminal that never
		// ends; once conn is closed its sends fail and it returns.
		go sendStdin(ctx, sio.Stdin, stdinCredit, send)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case rc, ok := <-sio.Resize:
				if ok {
					_ = send(execwire.TypeResize, execwire.AppendResize(nil, rc[0], rc[1]))
				}
			case sig, ok := <-sio.Signal:
				if ok && sig > 0 && sig <= execwire.MaxSignal {
					_ = send(execwire.TypeSignal, []byte{byte(sig)})
				}
			}
		}
	}()
	// A session the caller abandons is closed, so the program ends.
	stop := context.AfterFunc(ctx, func() { _ = send(execwire.TypeClose, nil) })
	defer stop()

	r := execwire.NewReader(conn)
	win := [3]*execwire.Window{nil, execwire.NewWindow(execwire.DefaultWindow), execwire.NewWindow(execwire.DefaultWindow)}
	out := [3]io.Writer{nil, sio.Stdout, sio.Stderr}
	for {
		f, err := r.ReadFrame()
		if err != nil {
			if ctx.Err() != nil {
				return execwire.Exit{}, ctx.Err()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return execwire.Exit{}, ErrExecLost
			}
			return execwire.Exit{}, fmt.Errorf("exec: %w", err)
		}
		switch f.Type {
		case execwire.TypeData:
			st, data, err := execwire.ParseData(f.Payload)
			if err != nil || st == execwire.Stdin {
				return execwire.Exit{}, fmt.Errorf("exec: the daemon sent %v", err)
			}
			if err := win[st].Received(len(data)); err != nil {
				return execwire.Exit{}, fmt.Errorf("exec: %w", err)
			}
			if w := out[st]; w != nil {
				if _, err := w.Write(data); err != nil {
					return execwire.Exit{}, fmt.Errorf("exec: writing the program's %s: %w", st, err)
				}
			}
			// A grant that cannot be sent is not the session's end: the
			// daemon closes the connection once it has relayed the exit,
			// which may already be here to read behind the last data.
			if g := win[st].Consumed(len(data)); g > 0 {
				_ = send(execwire.TypeWindow, execwire.AppendWindow(nil, st, g))
			}
		case execwire.TypeWindow:
			st, n, err := execwire.ParseWindow(f.Payload)
			if err == nil && st == execwire.Stdin {
				err = stdinCredit.Grant(n)
			}
			if err != nil {
				return execwire.Exit{}, fmt.Errorf("exec: %w", err)
			}
		case execwire.TypeExit:
			return execwire.ParseExit(f.Payload)
		}
	}
}

// sendStdin sends r as the credit allows, then the end of stdin.
func sendStdin(ctx context.Context, r io.Reader, credit *execwire.Credit, send func(execwire.Type, []byte) error) {
	buf := make([]byte, execwire.MaxData)
	for {
		n, err := r.Read(buf)
		for p := buf[:n]; len(p) > 0; {
			k, cerr := credit.Take(ctx, len(p))
			if cerr != nil {
				return
			}
			if send(execwire.TypeData, execwire.AppendData(nil, execwire.Stdin, p[:k])) != nil {
				return
			}
			p = p[k:]
		}
		if err != nil {
			_ = send(execwire.TypeCloseStdin, nil)
			return
		}
	}
}
