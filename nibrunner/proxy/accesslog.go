package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// requestLog is one access log line's fields.
type requestLog struct {
	id                string
	app               string
	method, host      string
	target, proto     string
	client            string
	status            int
	bytesIn, bytesOut int64
	start             time.Time
}

// Recorder is told of what the proxy does (the Prometheus metrics
// implement it).
type Recorder interface {
	// ProxyRequest is one request answered: the app ("" when no app
	// answers for the hostname), the status sent, body bytes received
	// from the client and sent to it.
	ProxyRequest(app string, status int, bytesIn, bytesOut int64)
	// WakeWaited is one wake the proxy began (via "http"), from the first
	// request to the app answering its health check, or failing.
	WakeWaited(via string, d time.Duration, err error)
}

// logRequest writes the access log line of one request and tells the
// recorder.
func (p *Proxy) logRequest(ctx context.Context, l requestLog) {
	if p.opts.Recorder != nil {
		p.opts.Recorder.ProxyRequest(l.app, l.status, l.bytesIn, l.bytesOut)
	}
	if p.opts.AccessLog == nil || !p.opts.AccessLog.Enabled(ctx, slog.LevelInfo) {
		return
	}
	p.opts.AccessLog.LogAttrs(ctx, slog.LevelInfo, "request",
		slog.String("id", l.id),
		slog.String("app", l.app),
		slog.String("client", l.client),
		slog.String("method", l.method),
		slog.String("host", l.host),
		slog.String("target", l.target),
		slog.String("proto", l.proto),
		slog.Int("status", l.status),
		slog.Int64("bytes_in", l.bytesIn),
		slog.Int64("bytes_out", l.bytesOut),
		slog.Duration("duration", p.opts.Now().Sub(l.start)),
	)
}

// requestIDs are this process's prefix and a counter: unique, cheap, and
// in order within one run.
var (
	requestIDPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	requestCounter atomic.Uint64
)

// requestID names one request in the access log and, as X-Request-Id, to
// the app (unless the client sent one).
func (p *Proxy) requestID() string { return string(appendRequestID(nil)) }

// appendRequestID appends a new request id to dst.
func appendRequestID(dst []byte) []byte {
	dst = append(dst, requestIDPrefix...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, requestCounter.Add(1), 36)
}

// AccessLogWriter buffers access log lines for w and writes them at most
// every flushEvery (or when 64 KiB are waiting), as nginx's access_log
// buffer= does: one write per line would cost a system call per request.
// Lines are whole in every write. Close writes what is left.
type AccessLogWriter struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	stop chan struct{}
	done chan struct{}
}

// NewAccessLogWriter starts the writer's flusher.
func NewAccessLogWriter(w io.Writer, flushEvery time.Duration) *AccessLogWriter {
	a := &AccessLogWriter{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				a.flush()
			case <-a.stop:
				a.flush()
				return
			}
		}
	}()
	return a
}

// Write takes one or more whole lines.
func (a *AccessLogWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	a.buf = append(a.buf, p...)
	full := len(a.buf) >= 64<<10
	a.mu.Unlock()
	if full {
		a.flush()
	}
	return len(p), nil
}

func (a *AccessLogWriter) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.buf) > 0 {
		_, _ = a.w.Write(a.buf)
		a.buf = a.buf[:0]
	}
}

// Close writes what is buffered and stops the flusher.
func (a *AccessLogWriter) Close() error {
	close(a.stop)
	<-a.done
	return nil
}
