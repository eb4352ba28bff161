package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// requestLog is one access log line's fields. The HTTP/1.x path fills
// the byte fields with slices of the request's own head, so a line costs
// no allocation; they are read only until the line is written.
type requestLog struct {
	id                []byte
	app               string
	method, host      []byte
	target, proto     []byte
	client            []byte
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
	// ProxyLimit is one cap or timeout that tripped: header_timeout,
	// header_size, body_timeout, send_timeout, connections,
	// client_connections, app_connections (limits.go).
	ProxyLimit(limit string)
}

// logRequest writes the access log line of one request into *line (a
// buffer its caller keeps between requests) and on to the access log,
// and tells the recorder. An AccessLogWriter takes it into buffer shard.
// now is when the request ended.
func (p *Proxy) logRequest(l *requestLog, line *[]byte, shard uint32, now time.Time) {
	if p.opts.Recorder != nil {
		p.opts.Recorder.ProxyRequest(l.app, l.status, l.bytesIn, l.bytesOut)
	}
	if p.opts.AccessLog == nil {
		return
	}
	*line = appendAccessLine((*line)[:0], now, now.Sub(l.start), l)
	if a, ok := p.opts.AccessLog.(*AccessLogWriter); ok {
		a.writeShard(*line, shard)
		return
	}
	_, _ = p.opts.AccessLog.Write(*line)
}

// appendAccessLine appends one access log line: a JSON object on one line,
// the shape log/slog's JSONHandler gives a record with these attributes
// (time, level, msg, then the fields; duration_s in seconds, as a
// float64 attribute is written, since a person reads seconds and nginx's
// $request_time is seconds too), written
// field by field rather than through slog: slog's record, attributes and
// string conversions were every allocation the proxy made per request,
// and a sixth of its CPU (docs/bench.md).
func appendAccessLine(b []byte, now time.Time, d time.Duration, l *requestLog) []byte {
	b = append(b, `{"time":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","id":`...)
	b = appendJSONString(b, l.id)
	b = append(b, `,"app":`...)
	b = appendJSONString(b, l.app)
	b = append(b, `,"client":`...)
	b = appendJSONString(b, l.client)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, l.method)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, l.host)
	b = append(b, `,"target":`...)
	b = appendJSONString(b, l.target)
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, l.proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"bytes_in":`...)
	b = strconv.AppendInt(b, l.bytesIn, 10)
	b = append(b, `,"bytes_out":`...)
	b = strconv.AppendInt(b, l.bytesOut, 10)
	b = append(b, `,"duration_s":`...)
	b = appendJSONFloat(b, d.Seconds())
	return append(b, "}\n"...)
}

// appendJSONFloat appends f as encoding/json writes a float64 (and so
// slog's JSONHandler): plain decimals from 1e-6 up to 1e21, exponents
// outside, with e-07 written e-7.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Whatever a client sent
// stays one valid line: quotes, backslashes and control bytes are
// escaped, bytes that are not UTF-8 become U+FFFD, and U+2028 and U+2029
// (line breaks to JavaScript) are escaped too.
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	plain := 0 // s[plain:i] is waiting to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[plain:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			plain = i
			continue
		}
		r, size := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
		plain = i
	}
	b = append(b, s[plain:]...)
	return append(b, '"')
}

func decodeRune[T string | []byte](s T) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v)
	default:
		return utf8.DecodeRune(v.([]byte))
	}
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

// appendRequestID appends a new request id to dst: it names one request
// in the access log and, as X-Request-Id, to the app (unless the client
// sent one).
func appendRequestID(dst []byte) []byte {
	dst = append(dst, requestIDPrefix...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, requestCounter.Add(1), 36)
}

// AccessLogWriter buffers access log lines for w and writes them at most
// every flushEvery (or as soon as 64 KiB wait in one buffer), as nginx's
// access_log buffer= does: one write per line would cost a system call
// per request. Lines are whole in every write. A request only appends
// under a lock; the write to w happens on the flusher's goroutine, from
// a buffer swapped out, so a slow w (a full pipe to journald) delays no
// request until 1 MiB waits in its buffer; past that, the line's writer
// waits its turn to write, so memory stays bounded. Close writes what is
// left.
//
// Lines go into one of accessLogShards buffers, each with its own lock:
// with one, that lock was the only one requests contended for (issue 41,
// docs/bench.md). Write uses the first, so the lines of one caller keep
// their order; the HTTP/1.x path gives each client connection a buffer of
// its own (writeShard), so one connection's lines keep theirs, and lines
// of different connections may come out of order by up to flushEvery,
// as those of nginx's workers, each with its own buffer, do.
type AccessLogWriter struct {
	shards [accessLogShards]logShard
	w      io.Writer
	wmu    sync.Mutex // held for each flush, keeping each buffer's lines in order
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// logShard is one buffer of lines, padded to a cache line of its own.
type logShard struct {
	mu    sync.Mutex
	buf   []byte
	spare []byte // the other buffer, nil while being written
	_     [64]byte
}

const (
	accessLogFlushAt = 64 << 10
	accessLogMax     = 1 << 20
	accessLogShards  = 16
)

// NewAccessLogWriter starts the writer's flusher.
func NewAccessLogWriter(w io.Writer, flushEvery time.Duration) *AccessLogWriter {
	a := &AccessLogWriter{w: w, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-a.kick:
			case <-a.stop:
				a.flush()
				return
			}
			a.flush()
		}
	}()
	return a
}

// Write takes one or more whole lines.
func (a *AccessLogWriter) Write(p []byte) (int, error) {
	a.writeShard(p, 0)
	return len(p), nil
}

// writeShard appends p to buffer k (mod accessLogShards).
func (a *AccessLogWriter) writeShard(p []byte, k uint32) {
	sh := &a.shards[k%accessLogShards]
	sh.mu.Lock()
	sh.buf = append(sh.buf, p...)
	n := len(sh.buf)
	sh.mu.Unlock()
	switch {
	case n >= accessLogMax:
		a.flush()
	case n >= accessLogFlushAt:
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// flush writes what is buffered. Each buffer's lines are swapped out
// under its lock and written under a.wmu only, so writers keep appending
// meanwhile.
func (a *AccessLogWriter) flush() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		out := sh.buf
		sh.buf = sh.spare[:0]
		sh.spare = nil
		sh.mu.Unlock()
		if len(out) > 0 {
			_, _ = a.w.Write(out)
		}
		sh.mu.Lock()
		sh.spare = out[:0]
		sh.mu.Unlock()
	}
}

// Close writes what is buffered and stops the flusher.
func (a *AccessLogWriter) Close() error {
	close(a.stop)
	<-a.done
	return nil
}
