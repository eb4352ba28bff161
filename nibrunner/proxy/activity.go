package proxy

import (
	"io"
	"sync/atomic"
	"time"
)

// meter is one app's traffic: how many requests (and upgraded streams)
// are open through the proxy, and when a byte last came in for it.
type meter struct {
	open atomic.Int64
	last atomic.Int64 // unix nanoseconds; 0 = never
}

func (m *meter) touch(now time.Time) {
	n := now.UnixNano()
	for {
		old := m.last.Load()
		if old >= n || m.last.CompareAndSwap(old, n) {
			return
		}
	}
}

func (m *meter) begin(now time.Time) {
	m.open.Add(1)
	m.touch(now)
}

// end closes a request; its end counts as activity, so a long request's
// idle time starts when it finishes, not when it began.
func (m *meter) end(now time.Time) {
	m.touch(now)
	m.open.Add(-1)
}

func (p *Proxy) meter(app string) *meter {
	if m, ok := p.meters.Load(app); ok {
		return m.(*meter)
	}
	m, _ := p.meters.LoadOrStore(app, &meter{})
	return m.(*meter)
}

// Activity implements daemon.Traffic: when a request last reached app
// (its start, any body bytes read from the client, or its end) and
// whether one is open now. An app the proxy has never seen reports the
// zero time.
func (p *Proxy) Activity(app string) (last time.Time, busy bool) {
	v, ok := p.meters.Load(app)
	if !ok {
		return time.Time{}, false
	}
	m := v.(*meter)
	busy = m.open.Load() > 0
	if n := m.last.Load(); n != 0 {
		last = time.Unix(0, n)
	}
	return last, busy
}

// countingBody marks activity whenever the client sends body bytes, so
// a slow upload keeps its app awake by what it sends.
type countingBody struct {
	io.ReadCloser
	m   *meter
	now func() time.Time
	n   int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.n += int64(n)
		b.m.touch(b.now())
	}
	return n, err
}
