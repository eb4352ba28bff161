package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// A boundary node that answers 429 or 503 a few times does not fail a
// registry sync or a plan: alp rides it out and says each retry.
func TestARateLimitingDevnetIsRiddenOutAndEachRetryIsSaid(t *testing.T) {
	d := startApplyDevnet(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	d.Throttle(3, http.StatusTooManyRequests, "0")
	out, errOut, err := runAlp(t, "", "registry", "sync", "--host", d.ICURL)
	if err != nil {
		t.Fatalf("registry sync through three 429s: %v\n%s", err, errOut)
	}
	if out != "registry version "+itoa(d.Registry.Version())+"\n" || d.Throttled() != 3 {
		t.Fatalf("stdout %q, %d answered 429", out, d.Throttled())
	}
	for i, n := range []string{"retry 1 of 4", "retry 2 of 4", "retry 3 of 4"} {
		if !strings.Contains(errOut, n) || !strings.Contains(errOut, "answered 429 Too Many Requests") {
			t.Fatalf("retry %d is not said:\n%s", i+1, errOut)
		}
	}
	d.Throttle(2, http.StatusServiceUnavailable, "")
	out, errOut, err = runAlp(t, "", "plan", "halt-app1", "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "state.json"))
	if err != nil || !strings.Contains(out, "halt-app1 (update_subnet): ready") || strings.Count(errOut, "answered 503 Service Unavailable") != 2 {
		t.Fatalf("plan through two 503s: %v\n%s%s", err, out, errOut)
	}
	// More than the agent retries is the error it was.
	d.Throttle(100, http.StatusTooManyRequests, "0")
	if _, errOut, err := runAlp(t, "", "registry", "sync", "--host", d.ICURL); err == nil || !strings.Contains(err.Error(), "429") || strings.Count(errOut, "retry ") != 4 {
		t.Fatalf("a devnet that keeps answering 429: %v\n%s", err, errOut)
	}
}
