package agent

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transient answers. A boundary node answers 429 when it rate-limits a
// client or sheds load, and 503 when it has no healthy replica to send the
// request to; both say "later", and the same signed request may be sent
// again (a call is identified by its request id, so a second copy is not a
// second call). Every other status is the answer.
func transient(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// Retry is one transient answer the agent is about to retry.
type Retry struct {
	// Path is the request's path, Status the answer's HTTP status.
	Path   string
	Status int
	// Attempt counts the retries of this request, from 1; Of is the most
	// it will make.
	Attempt, Of int
	// Wait is how long it waits first: the backoff, or the answer's
	// Retry-After when that is longer.
	Wait time.Duration
}

func (r Retry) String() string {
	return fmt.Sprintf("%s answered %d %s; retry %d of %d in %s", r.Path, r.Status, http.StatusText(r.Status), r.Attempt, r.Of, r.Wait.Round(time.Millisecond))
}

// The retry defaults: four retries, 250 ms doubling, no wait longer than
// 10 s. A Retry-After beyond that ends the retries: waiting so long is the
// caller's decision, not the agent's.
const (
	defaultMaxRetries   = 4
	defaultRetryBase    = 250 * time.Millisecond
	defaultMaxRetryWait = 10 * time.Second
)

// retrying sends one request through send, again after each transient
// answer, at most cfg.MaxRetries times, waiting the backoff or the
// answer's Retry-After, whichever is longer. It gives the last answer
// back when the retries run out, Retry-After asks for more than
// MaxRetryWait, or ctx would end during the wait.
func (a *Agent) retrying(ctx context.Context, path string, send func() (*response, error)) (*response, error) {
	backoff := a.cfg.RetryBase
	for attempt := 1; ; attempt++ {
		r, err := send()
		if err != nil || !transient(r.status) || attempt > a.cfg.MaxRetries {
			return r, err
		}
		wait := backoff
		if after, ok := retryAfter(r.retryAfter, a.cfg.Now()); ok {
			if after > a.cfg.MaxRetryWait {
				return r, nil
			}
			wait = max(wait, after)
		}
		wait = min(wait, a.cfg.MaxRetryWait)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return r, nil
		}
		a.retries.Add(1)
		if a.cfg.OnRetry != nil {
			a.cfg.OnRetry(Retry{Path: path, Status: r.status, Attempt: attempt, Of: a.cfg.MaxRetries, Wait: wait})
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: %w (waiting to retry after %d)", path, ctx.Err(), r.status)
		case <-t.C:
		}
		backoff *= 2
	}
}

// Retries is how many transient answers the agent has retried so far.
func (a *Agent) Retries() int64 { return a.retries.Load() }

// retryAfter reads a Retry-After header (RFC 9110 section 10.2.3): a count
// of seconds or an HTTP date, relative to now.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(h, 10, 32); err == nil {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
