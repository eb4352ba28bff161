package agent

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// quickRetries makes the agent's backoff short and records each retry.
func quickRetries(got *[]Retry) func(*Config) {
	var mu sync.Mutex
	return func(c *Config) {
		c.RetryBase = time.Millisecond
		c.OnRetry = func(r Retry) {
			mu.Lock()
			defer mu.Unlock()
			*got = append(*got, r)
		}
	}
}

func TestCallQueryAndReadStateRideOutTransientAnswers(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		status   int
		do       func(*Agent) error
	}{
		{"v4 call", http.StatusTooManyRequests, func(a *Agent) error { _, err := a.Call(ctx(t), inRange, "echo", []byte("x")); return err }},
		{"v3 query", http.StatusServiceUnavailable, func(a *Agent) error { _, err := a.Query(ctx(t), inRange, "echo", []byte("x")); return err }},
		{"v3 read_state", http.StatusTooManyRequests, func(a *Agent) error {
			_, err := a.ReadState(ctx(t), inRange, [][][]byte{{[]byte("time")}})
			return err
		}},
	} {
		f := newFakeReplica(t)
		f.throttle[tc.endpoint] = 3
		f.throttleStatus = tc.status
		var retries []Retry
		a := newAgent(t, f, quickRetries(&retries))
		if err := tc.do(a); err != nil {
			t.Errorf("%s answering %d three times: %v", tc.endpoint, tc.status, err)
			continue
		}
		if len(retries) != 3 || a.Retries() != 3 || retries[2].Attempt != 3 || retries[2].Of != 4 || retries[0].Status != tc.status {
			t.Errorf("%s: retries %+v, counted %d", tc.endpoint, retries, a.Retries())
		}
		if f.hitsOf(tc.endpoint) != 4 {
			t.Errorf("%s: %d requests, want 4", tc.endpoint, f.hitsOf(tc.endpoint))
		}
	}
}

func TestRetriesAreBoundedAndTheLastAnswerIsTheError(t *testing.T) {
	f := newFakeReplica(t)
	f.throttle["v3 query"] = 10
	var retries []Retry
	a := newAgent(t, f, quickRetries(&retries), func(c *Config) { c.MaxRetries = 2 })
	_, err := a.Query(ctx(t), inRange, "echo", nil)
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests || len(retries) != 2 || f.hitsOf("v3 query") != 3 {
		t.Fatalf("err %v, %d retries, %d requests", err, len(retries), f.hitsOf("v3 query"))
	}
	// A 500 is an answer, not a rate limit: never retried here.
	g := newFakeReplica(t)
	g.throttle["v3 query"], g.throttleStatus = 1, http.StatusInternalServerError
	retries = nil
	if _, err := newAgent(t, g, quickRetries(&retries)).Query(ctx(t), inRange, "echo", nil); err == nil || len(retries) != 0 {
		t.Fatalf("a 500: err %v, %d retries", err, len(retries))
	}
	// MaxRetries < 0 turns retrying off.
	h := newFakeReplica(t)
	h.throttle["v3 query"] = 1
	if _, err := newAgent(t, h, func(c *Config) { c.MaxRetries = -1 }).Query(ctx(t), inRange, "echo", nil); !errors.As(err, &he) {
		t.Fatalf("no retries: err %v", err)
	}
}

func TestRetryAfterIsHonouredAndTooLongAWaitIsNotTaken(t *testing.T) {
	f := newFakeReplica(t)
	f.throttle["v3 query"], f.retryAfter = 1, "1"
	var retries []Retry
	start := time.Now()
	if _, err := newAgent(t, f, quickRetries(&retries)).Query(ctx(t), inRange, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if len(retries) != 1 || retries[0].Wait != time.Second || time.Since(start) < time.Second {
		t.Fatalf("retries %+v after %s, want one wait of Retry-After's 1s", retries, time.Since(start))
	}
	g := newFakeReplica(t)
	g.throttle["v3 query"], g.retryAfter = 1, "3600"
	retries = nil
	_, err := newAgent(t, g, quickRetries(&retries)).Query(ctx(t), inRange, "echo", nil)
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests || len(retries) != 0 {
		t.Fatalf("Retry-After: 3600: err %v, retries %+v", err, retries)
	}
}

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false}, {"5", 5 * time.Second, true}, {" 0 ", 0, true}, {"-1", 0, false}, {"soon", 0, false},
		{"Tue, 01 Dec 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Tue, 01 Dec 2026 11:00:00 GMT", 0, true},
	} {
		if got, ok := retryAfter(tc.h, now); got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}
