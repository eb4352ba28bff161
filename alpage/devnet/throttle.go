package devnet

import (
	"net/http"
	"sync"
)

// throttle answers the next n requests of the IC endpoint with status and
// a Retry-After header, as a boundary node that rate-limits (429) or has no
// healthy replica (503) does; then it serves as before.
type throttle struct {
	h http.Handler

	mu         sync.Mutex
	n          int
	status     int
	retryAfter string
	answered   int
}

func (t *throttle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	if t.n > 0 {
		t.n--
		t.answered++
		status, after := t.status, t.retryAfter
		t.mu.Unlock()
		if after != "" {
			w.Header().Set("Retry-After", after)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	t.mu.Unlock()
	t.h.ServeHTTP(w, r)
}

// Throttle makes the IC endpoint answer its next n requests with status
// (429 or 503) and, when retryAfter is not "", that Retry-After header.
func (d *Devnet) Throttle(n, status int, retryAfter string) {
	d.throttle.mu.Lock()
	defer d.throttle.mu.Unlock()
	d.throttle.n, d.throttle.status, d.throttle.retryAfter = n, status, retryAfter
}

// Throttled is how many requests the IC endpoint has answered so.
func (d *Devnet) Throttled() int {
	d.throttle.mu.Lock()
	defer d.throttle.mu.Unlock()
	return d.throttle.answered
}
