package proxy

import (
	"io"
	"sync/atomic"
	"time"

	"alpnib.dev/nibrunner/proxy/meter"
)

// Activity implements daemon.Traffic: when a request last reached app
// (its start, any body bytes read from the client, or its end) and
// whether one is open now. An app the proxy has never seen reports the
// zero time.
func (p *Proxy) Activity(app string) (last time.Time, busy bool) {
	return p.meters.Activity(app)
}

// countingBody marks activity whenever the client sends body bytes, so
// a slow upload keeps its app awake by what it sends; each read is timed
// by watch (nil: untimed).
type countingBody struct {
	io.ReadCloser
	m     *meter.Meter
	now   func() time.Time
	n     atomic.Int64 // read by the handler while the transport reads
	watch *opWatch
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.watch.begin()
	n, err := b.ReadCloser.Read(p)
	b.watch.end()
	if n > 0 {
		b.n.Add(int64(n))
		b.m.Touch(b.now())
	}
	return n, err
}
