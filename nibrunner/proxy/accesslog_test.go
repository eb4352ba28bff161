package proxy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

// slogLine is the line log/slog's JSONHandler writes for l: the shape the
// access log promises.
func slogLine(t *testing.T, now time.Time, d time.Duration, l *requestLog) string {
	t.Helper()
	var buf bytes.Buffer
	r := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	r.AddAttrs(
		slog.String("id", string(l.id)), slog.String("app", l.app), slog.String("client", string(l.client)),
		slog.String("method", string(l.method)), slog.String("host", string(l.host)),
		slog.String("target", string(l.target)), slog.String("proto", string(l.proto)),
		slog.Int("status", l.status), slog.Int64("bytes_in", l.bytesIn), slog.Int64("bytes_out", l.bytesOut),
		slog.Float64("duration_s", d.Seconds()))
	if err := slog.NewJSONHandler(&buf, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestAnAccessLogLineIsTheLineSlogsJSONHandlerWrites(t *testing.T) {
	now := time.Date(2026, 12, 1, 11, 3, 17, 123456789, time.FixedZone("", 3600))
	for _, target := range []string{
		"/",
		"/search?q=caf\u00e9&x=\u4e16\u754c",
		`/a"b\c`,
		"/tab\there/nl\nhere/cr\rhere/nul\x00/esc\x1b/del\x7f",
		"/bad\xff\xfeutf8/cut\xe4\xb8",
		"/js\u2028\u2029breaks",
	} {
		l := &requestLog{
			id: []byte("0a1b2c3d-k9"), app: "shop", client: []byte("::1"), method: []byte("GET"),
			host: []byte("shop.example.com"), target: []byte(target), proto: []byte("HTTP/1.1"),
			status: 200, bytesIn: 0, bytesOut: 31,
		}
		got := string(appendAccessLine(nil, now, 1234567*time.Nanosecond, l))
		if want := slogLine(t, now, 1234567*time.Nanosecond, l); got != want {
			t.Errorf("target %q:\n got %s\nwant %s", target, got, want)
		}
	}
}

func TestAnAccessLogLineSaysItsDurationInSecondsAsSlogWould(t *testing.T) {
	now := time.Date(2026, 12, 6, 5, 4, 23, 0, time.UTC)
	l := &requestLog{id: []byte("1"), app: "echo", status: 200}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, `"duration_s":0}`},
		{300 * time.Nanosecond, `"duration_s":3e-7}`},
		{time.Microsecond, `"duration_s":0.000001}`},
		{6114934 * time.Nanosecond, `"duration_s":0.006114934}`},
		{90 * time.Second, `"duration_s":90}`},
	} {
		got := string(appendAccessLine(nil, now, c.d, l))
		if want := slogLine(t, now, c.d, l); got != want {
			t.Errorf("%v:\n got %s\nwant %s", c.d, got, want)
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%v: %s does not end %s", c.d, got, c.want)
		}
	}
}

func TestAnAccessLogLineAllocatesNothingOnceItsBufferHasGrown(t *testing.T) {
	l := &requestLog{id: []byte("0a1b2c3d-k9"), app: "shop", client: []byte("127.0.0.1"), method: []byte("GET"),
		host: []byte("shop.example.com"), target: []byte("/"), proto: []byte("HTTP/1.1"), status: 200, bytesOut: 31}
	line := appendAccessLine(nil, time.Now(), time.Millisecond, l)
	if n := testing.AllocsPerRun(100, func() { line = appendAccessLine(line[:0], time.Now(), time.Millisecond, l) }); n != 0 {
		t.Fatalf("a line cost %v allocations", n)
	}
}

// stuckWriter blocks every Write until release is closed, and says when
// one began.
type stuckWriter struct {
	began   chan struct{}
	release chan struct{}
	out     testenv.SyncBuffer
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	select {
	case w.began <- struct{}{}:
	default:
	}
	<-w.release
	return w.out.Write(p)
}

func TestAccessLogLinesAreNotHeldUpByASlowWriterAndArriveWholeInOrder(t *testing.T) {
	w := &stuckWriter{began: make(chan struct{}, 1), release: make(chan struct{})}
	a := NewAccessLogWriter(w, time.Hour) // only a full buffer or Close flushes
	var want strings.Builder
	line := func(i int) {
		s := fmt.Sprintf("{\"n\":%d,\"pad\":%q}\n", i, strings.Repeat("x", 200))
		want.WriteString(s)
		if _, err := a.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for ; want.Len() < accessLogFlushAt; i++ {
		line(i)
	}
	<-w.began // the flusher is writing, and stuck
	// Lines keep going into the other buffer meanwhile: were they waiting
	// on the stuck write, this loop would never end.
	for end := i + 100; i < end; i++ {
		line(i)
	}
	close(w.release)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.out.String(); got != want.String() {
		t.Fatalf("the writer got %d bytes, not the %d written in order", len(got), want.Len())
	}
}

// TestEveryConnectionsAccessLogLinesArriveWholeAndInTheirOrder: lines
// spread over the writer's buffers, one buffer per connection, all come
// out whole, and each connection's in the order it wrote them.
func TestEveryConnectionsAccessLogLinesArriveWholeAndInTheirOrder(t *testing.T) {
	var out testenv.SyncBuffer
	a := NewAccessLogWriter(&out, time.Millisecond)
	var wg sync.WaitGroup
	const conns, lines = 40, 300
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				a.writeShard(fmt.Appendf(nil, "{\"conn\":%d,\"n\":%d}\n", c, i), uint32(c))
			}
		}()
	}
	wg.Wait()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, conns)
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var c, n int
		if _, err := fmt.Sscanf(l, "{\"conn\":%d,\"n\":%d}", &c, &n); err != nil {
			t.Fatalf("line %q is not one whole line: %v", l, err)
		}
		if n != next[c] {
			t.Fatalf("connection %d's line %d came where its line %d was due", c, n, next[c])
		}
		next[c]++
	}
	for c, n := range next {
		if n != lines {
			t.Errorf("connection %d: %d lines arrived, not %d", c, n, lines)
		}
	}
}
