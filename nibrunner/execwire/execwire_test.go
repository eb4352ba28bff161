package execwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"
)

func frame(t *testing.T, typ Type, session uint32, payload []byte) []byte {
	t.Helper()
	b, err := AppendFrame(nil, typ, session, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFramesOfManySessionsReadBackInOrder(t *testing.T) {
	spec, err := AppendSpec(nil, Spec{Argv: []string{"/bin/ls", "-l"}, Env: []string{"A=1"}, Workdir: "/srv", UID: 65534, GID: 65534, TTY: true, Rows: 24, Cols: 80, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	stream = append(stream, frame(t, TypeOpen, 1, spec)...)
	stream = append(stream, frame(t, TypeData, 2, AppendData(nil, Stdout, []byte("hello")))...)
	stream = append(stream, frame(t, TypeWindow, 1, AppendWindow(nil, Stderr, 4096))...)
	stream = append(stream, frame(t, TypeResize, 1, AppendResize(nil, 50, 132))...)
	stream = append(stream, frame(t, TypeSignal, 1, []byte{2})...)
	stream = append(stream, frame(t, TypeCloseStdin, 1, nil)...)
	stream = append(stream, frame(t, TypeExit, 2, AppendExit(nil, Exit{Code: 130}))...)

	r := NewReader(bytes.NewReader(stream))
	f, err := r.ReadFrame()
	if err != nil || f.Type != TypeOpen || f.Session != 1 {
		t.Fatalf("first frame = %v %v", f, err)
	}
	s, err := ParseSpec(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Argv: []string{"/bin/ls", "-l"}, Env: []string{"A=1"}, Workdir: "/srv", UID: 65534, GID: 65534, TTY: true, Rows: 24, Cols: 80, Stdin: true}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("spec = %+v, want %+v", s, want)
	}
	f, _ = r.ReadFrame()
	if st, d, err := ParseData(f.Payload); err != nil || st != Stdout || string(d) != "hello" || f.Session != 2 {
		t.Fatalf("data = %v %q %v", st, d, err)
	}
	f, _ = r.ReadFrame()
	if st, n, err := ParseWindow(f.Payload); err != nil || st != Stderr || n != 4096 {
		t.Fatalf("window = %v %d %v", st, n, err)
	}
	f, _ = r.ReadFrame()
	if rows, cols, err := ParseResize(f.Payload); err != nil || rows != 50 || cols != 132 {
		t.Fatalf("resize = %d×%d %v", rows, cols, err)
	}
	f, _ = r.ReadFrame()
	if sig, err := ParseSignal(f.Payload); err != nil || sig != 2 {
		t.Fatalf("signal = %d %v", sig, err)
	}
	f, _ = r.ReadFrame()
	if f.Type != TypeCloseStdin || len(f.Payload) != 0 {
		t.Fatalf("close-stdin = %v", f)
	}
	f, _ = r.ReadFrame()
	if e, err := ParseExit(f.Payload); err != nil || e.Code != 130 || e.Error != "" {
		t.Fatalf("exit = %+v %v", e, err)
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestAStreamCutInsideAFrameIsUnexpectedEOF(t *testing.T) {
	b := frame(t, TypeData, 1, AppendData(nil, Stdout, []byte("abcdef")))
	_, err := NewReader(bytes.NewReader(b[:len(b)-2])).ReadFrame()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestAnOversizeLengthIsRefusedBeforeAnythingIsAllocated(t *testing.T) {
	h := []byte{byte(TypeData), 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff}
	_, err := NewReader(bytes.NewReader(h)).ReadFrame()
	if !errors.Is(err, ErrFrame) {
		t.Fatalf("err = %v, want ErrFrame", err)
	}
	if _, err := AppendFrame(nil, TypeData, 1, make([]byte, MaxPayload+1)); !errors.Is(err, ErrFrame) {
		t.Fatalf("encoding an oversize payload: %v, want ErrFrame", err)
	}
}

func TestAnUnknownTypeIsRefused(t *testing.T) {
	for _, typ := range []byte{0, 9, 255} {
		if _, err := ParseFrame([]byte{typ, 0, 0, 0, 1, 0, 0, 0, 0}); !errors.Is(err, ErrFrame) {
			t.Errorf("type %d: err = %v, want ErrFrame", typ, err)
		}
	}
}

func TestAnOpenWithoutAProgramIsRefusedBothWays(t *testing.T) {
	if _, err := AppendSpec(nil, Spec{}); err == nil {
		t.Fatal("encoding an empty argv succeeded")
	}
	p, _ := AppendSpec(nil, Spec{Argv: []string{""}})
	if _, err := ParseSpec(p); err == nil {
		t.Fatal("decoding an empty program name succeeded")
	}
}

func TestAnOpenTooLargeForAFrameIsRefused(t *testing.T) {
	big := make([]string, 3)
	for i := range big {
		big[i] = string(bytes.Repeat([]byte("x"), MaxPayload/2))
	}
	if _, err := AppendSpec(nil, Spec{Argv: big}); !errors.Is(err, ErrFrame) {
		t.Fatalf("err = %v, want ErrFrame", err)
	}
}

func TestSignalZeroAndAboveSIGRTMAXAreRefused(t *testing.T) {
	for _, p := range [][]byte{{0}, {65}, {}, {1, 2}} {
		if _, err := ParseSignal(p); err == nil {
			t.Errorf("signal payload %v accepted", p)
		}
	}
}

func TestASenderWithoutCreditWaitsForAGrant(t *testing.T) {
	c := NewCredit(10)
	ctx := context.Background()
	if n, err := c.Take(ctx, 100); n != 10 || err != nil {
		t.Fatalf("first take = %d %v, want the whole window of 10", n, err)
	}
	got := make(chan int)
	go func() {
		n, _ := c.Take(ctx, 100)
		got <- n
	}()
	select {
	case n := <-got:
		t.Fatalf("take returned %d with no credit left", n)
	case <-time.After(20 * time.Millisecond):
	}
	if err := c.Grant(7); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != 7 {
		t.Fatalf("take after a grant of 7 = %d", n)
	}
}

func TestATakeWaitingForCreditEndsWithItsContextOrAClose(t *testing.T) {
	c := NewCredit(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Take(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	done := make(chan error)
	go func() { _, err := c.Take(context.Background(), 1); done <- err }()
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestAGrantBeyondTheMaximumWindowIsRefused(t *testing.T) {
	c := NewCredit(DefaultWindow)
	if err := c.Grant(MaxWindow); !errors.Is(err, ErrFrame) {
		t.Fatalf("err = %v, want ErrFrame", err)
	}
}

func TestAReceiverRefusesMoreThanItGranted(t *testing.T) {
	w := NewWindow(100)
	if err := w.Received(60); err != nil {
		t.Fatal(err)
	}
	if err := w.Received(41); !errors.Is(err, ErrFrame) {
		t.Fatalf("41 bytes over a remaining 40: err = %v, want ErrFrame", err)
	}
	if g := w.Consumed(30); g != 0 {
		t.Fatalf("granted %d after consuming less than half a window", g)
	}
	if g := w.Consumed(30); g != 60 {
		t.Fatalf("granted %d after consuming 60, want 60", g)
	}
	if err := w.Received(100); err != nil {
		t.Fatalf("the whole window after a grant back: %v", err)
	}
}

// A sender that honours Credit against a receiver that honours Window
// never puts more than one window in flight, however slowly the receiver
// consumes.
func TestInFlightBytesNeverExceedTheWindow(t *testing.T) {
	const window = 1000
	c, w := NewCredit(window), NewWindow(window)
	inFlight, sent := 0, 0
	for sent < 100*window {
		n, err := c.Take(context.Background(), 333)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Received(n); err != nil {
			t.Fatal(err)
		}
		sent += n
		inFlight += n
		if inFlight > window {
			t.Fatalf("%d bytes in flight over a window of %d", inFlight, window)
		}
		// The slow reader consumes a little at a time.
		for inFlight > 0 {
			step := min(inFlight, 97)
			inFlight -= step
			if g := w.Consumed(step); g > 0 {
				if err := c.Grant(g); err != nil {
					t.Fatal(err)
				}
			}
			if inFlight < window/2 {
				break
			}
		}
	}
}

func FuzzParseFrame(f *testing.F) {
	spec, _ := AppendSpec(nil, Spec{Argv: []string{"sh"}, Env: []string{"X=y"}})
	for _, seed := range [][]byte{
		mustFrame(TypeOpen, 1, spec),
		mustFrame(TypeData, 2, AppendData(nil, Stderr, []byte("x"))),
		mustFrame(TypeWindow, 3, AppendWindow(nil, Stdout, 1)),
		mustFrame(TypeResize, 4, AppendResize(nil, 1, 2)),
		mustFrame(TypeExit, 5, AppendExit(nil, Exit{Code: 127, Error: "no such program"})),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to the same bytes.
		again, err := AppendFrame(nil, fr.Type, fr.Session, fr.Payload)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gave %x, %v", b, again, err)
		}
		switch fr.Type {
		case TypeOpen:
			if s, err := ParseSpec(fr.Payload); err == nil {
				p, err := AppendSpec(nil, s)
				if err != nil {
					t.Fatalf("a parsed spec does not encode: %v", err)
				}
				s2, err := ParseSpec(p)
				if err != nil || !reflect.DeepEqual(s, s2) {
					t.Fatalf("spec round trip: %+v → %+v, %v", s, s2, err)
				}
			}
		case TypeData:
			_, _, _ = ParseData(fr.Payload)
		case TypeWindow:
			_, _, _ = ParseWindow(fr.Payload)
		case TypeResize:
			_, _, _ = ParseResize(fr.Payload)
		case TypeSignal:
			_, _ = ParseSignal(fr.Payload)
		case TypeExit:
			if e, err := ParseExit(fr.Payload); err == nil && !bytes.Equal(AppendExit(nil, e), fr.Payload) {
				t.Fatalf("exit round trip changed %x", fr.Payload)
			}
		}
	})
}

func mustFrame(t Type, s uint32, p []byte) []byte {
	b, err := AppendFrame(nil, t, s, p)
	if err != nil {
		panic(err)
	}
	return b
}
