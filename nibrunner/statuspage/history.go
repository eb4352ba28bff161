package statuspage

import (
	"sync"
	"time"
)

// maxPoints bounds each series of a History: an hour of one sample a
// second, and the oldest go first.
const maxPoints = 3600

// History keeps the last Window of wake latencies and of the host's
// memory held, for the page's charts. It is safe for concurrent use.
type History struct {
	mu          sync.Mutex
	wakes, held []Point // guarded by mu, oldest first
}

// Wake records app's wake at at, which took d.
func (h *History) Wake(app string, at time.Time, d time.Duration) {
	h.add(&h.wakes, Point{At: at, Value: float64(d.Microseconds()) / 1000, App: app})
}

// Held records the memory the host's guests held at at.
func (h *History) Held(at time.Time, mib uint64) {
	h.add(&h.held, Point{At: at, Value: float64(mib)})
}

func (h *History) add(s *[]Point, p Point) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*s = append(*s, p)
	from := p.At.Add(-Window)
	drop := 0
	for drop < len(*s) && ((*s)[drop].At.Before(from) || len(*s)-drop > maxPoints) {
		drop++
	}
	if drop > 0 {
		*s = append((*s)[:0:0], (*s)[drop:]...)
	}
}

// Points returns copies of both series.
func (h *History) Points() (wakes, held []Point) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Point(nil), h.wakes...), append([]Point(nil), h.held...)
}
