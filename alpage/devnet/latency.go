package devnet

import (
	"net/http"
	"time"
)

// WithLatency delays every request by d before h serves it, so that fan-out
// against the devnet can be measured with a realistic round-trip time. A
// request whose client gives up while waiting is dropped.
func WithLatency(d time.Duration, h http.Handler) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			h.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}
