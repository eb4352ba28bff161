package devnet

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
)

// dropAfterCall serves the first n update calls (POST …/call) to the IC
// in full — the replica executes them — and then closes the connection
// without a byte of the answer, as a boundary node that drops a
// connection after forwarding the call does. The caller cannot tell
// whether its call ran: the case a submit that is safe to retry has to
// survive. Every later request is served as usual.
type dropAfterCall struct {
	next http.Handler

	mu      sync.Mutex
	left    int
	dropped int
}

// DroppedCalls is how many calls the devnet answered by dropping the
// connection (Options.DropCalls).
func (d *Devnet) DroppedCalls() int {
	if d.drop == nil {
		return 0
	}
	d.drop.mu.Lock()
	defer d.drop.mu.Unlock()
	return d.drop.dropped
}

func (h *dropAfterCall) take(r *http.Request) bool {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/call") {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.left == 0 {
		return false
	}
	h.left--
	h.dropped++
	return true
}

func (h *dropAfterCall) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok || !h.take(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	rec := &discardResponse{header: http.Header{}, status: http.StatusOK}
	h.next.ServeHTTP(rec, r)
	if rec.status != http.StatusOK && rec.status != http.StatusAccepted {
		// Not a call the replica took (an endpoint version it does not
		// serve, a malformed request): answered as usual, not counted.
		h.mu.Lock()
		h.left++
		h.dropped--
		h.mu.Unlock()
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = conn.Close()
}

// discardResponse is a ResponseWriter whose answer nobody receives.
type discardResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) Write(b []byte) (int, error) { return d.body.Write(b) }
func (d *discardResponse) WriteHeader(code int)        { d.status = code }
