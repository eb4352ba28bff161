package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/proxy"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
)

// These tests run the daemon on the fake VMM behind the real HTTP proxy
// (proxy.New as its Router), all on loopback: what a user of the host
// sees when asking for an app by its hostname.

// recordingRouter is the proxy, keeping every table the daemon applied;
// applied is closed, and replaced, at each one.
type recordingRouter struct {
	*proxy.Proxy
	mu      sync.Mutex
	tables  [][]route.Route
	applied chan struct{}
}

func (r *recordingRouter) Apply(ctx context.Context, routes []route.Route) error {
	r.mu.Lock()
	r.tables = append(r.tables, append([]route.Route(nil), routes...))
	if r.applied != nil {
		close(r.applied)
	}
	r.applied = make(chan struct{})
	r.mu.Unlock()
	return r.Proxy.Apply(ctx, routes)
}

// next returns the channel closed when the daemon applies its next table.
func (r *recordingRouter) next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		r.applied = make(chan struct{})
	}
	return r.applied
}

// first is the first route applied for hostname that cond accepts.
func (r *recordingRouter) first(hostname string, cond func(route.Route) bool) (route.Route, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tb := range r.tables {
		for _, rt := range tb {
			if rt.Hostname == hostname && cond(rt) {
				return rt, true
			}
		}
	}
	return route.Route{}, false
}

func routedHost(t *testing.T) (*daemon.Host, *recordingRouter, *daemon.Daemon, string) {
	t.Helper()
	h := daemon.NewHost(t)
	rr := &recordingRouter{Proxy: proxy.New(proxy.Options{Logf: t.Logf})}
	t.Cleanup(rr.Close)
	d, _ := h.StartRouted(t, rr, rr)
	rr.SetWaker(d)
	srv := httptest.NewServer(rr.Proxy)
	t.Cleanup(srv.Close)
	return h, rr, d, srv.URL
}

func askHost(t *testing.T, base, hostname string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = hostname
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("ask %s: %v", hostname, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitRoute(t *testing.T, rr *recordingRouter, hostname, what string, cond func(route.Route) bool) route.Route {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		// Taken before the question, so a table applied in between is not
		// missed.
		applied := rr.next()
		if rt, ok := rr.first(hostname, cond); ok {
			return rt
		}
		select {
		case <-applied:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestARequestByHostnameReachesTheFakeVMMsGuestThroughTheProxy(t *testing.T) {
	h, rr, _, base := routedHost(t)
	const hostname = "blog.apps.example.net"
	h.Write(t, h.App("blog", "blog-1"))
	h.WaitFor(t, "blog running", func(r *reported.HostReportedState) bool {
		return len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceRunning
	})
	up := waitRoute(t, rr, hostname, "blog's route up", func(rt route.Route) bool { return rt.State == route.Up })
	if up.Addr == "" {
		t.Fatalf("the up route names no address: %+v", up)
	}

	status, body := askHost(t, base, hostname)
	if status != http.StatusOK || body != "blog blog-1\n" {
		t.Fatalf("blog answered %d %q through the proxy, want 200 from its guest", status, body)
	}

	// reported.json's hostPort is where the guest answers.
	_, port, err := net.SplitHostPort(up.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := h.WaitFor(t, "blog reported", func(r *reported.HostReportedState) bool { return len(r.Instances) == 1 })
	if got := strconv.Itoa(int(r.Instances[0].HostPort)); got != port {
		t.Fatalf("reported hostPort %s, but the guest answers at %s", got, up.Addr)
	}
}

func TestARequestWhileTheGuestBootsWaitsForItToBeHealthyRatherThanA502(t *testing.T) {
	h, rr, _, base := routedHost(t)
	const hostname = "slow.apps.example.net"
	// The fake guest accepts and drops connections for 3 s, like a
	// microVM whose app does not listen yet.
	app := h.App("slow", "slow-1", "FAKE_BOOT_DELAY_MS", "3000")
	app.Config.HealthCheck.GracePeriodMs = 30000
	h.Write(t, app)

	booting := waitRoute(t, rr, hostname, "slow's guest running", func(rt route.Route) bool { return rt.Addr != "" })
	if booting.State != route.Sleeping {
		t.Fatalf("the first route with a running guest says %q, want %q until its health check passes", booting.State, route.Sleeping)
	}
	sent := time.Now()
	status, body := askHost(t, base, hostname)
	if status != http.StatusOK || body != "slow slow-1\n" {
		t.Fatalf("a request during the boot got %d %q, want the app's 200 once healthy", status, body)
	}
	t.Logf("answered after %v", time.Since(sent))
	waitRoute(t, rr, hostname, "slow's route up", func(rt route.Route) bool { return rt.State == route.Up })
}

func TestARequestToASleepingFakeGuestWakesItAndReachesItWhereverItNowListens(t *testing.T) {
	h, rr, d, base := routedHost(t)
	const hostname = "nap.apps.example.net"
	app := h.App("nap", "nap-1")
	app.DesiredState = desired.StateOnRequest
	h.Write(t, app)
	first := waitRoute(t, rr, hostname, "nap's route up", func(rt route.Route) bool { return rt.State == route.Up })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Sleep(ctx, "nap"); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, rr, hostname, "nap's route sleeping", func(rt route.Route) bool { return rt.State == route.Sleeping && rt.Addr == "" })

	status, body := askHost(t, base, hostname)
	if status != http.StatusOK || body != "nap nap-1\n" {
		t.Fatalf("the woken app answered %d %q, want 200 from its guest", status, body)
	}
	again := waitRoute(t, rr, hostname, "nap's route up again", func(rt route.Route) bool {
		return rt.State == route.Up && rt.Addr != first.Addr
	})
	t.Logf("the guest answered at %s, then at %s once woken", first.Addr, again.Addr)
}

func TestAnAppStoppedInItsFirstDocumentAnswersNotRunningRatherThanUnknown(t *testing.T) {
	h, rr, _, base := routedHost(t)
	const hostname = "quiet.apps.example.net"
	app := h.App("quiet", "quiet-1")
	app.DesiredState = desired.StateStopped
	h.Write(t, app)
	h.WaitFor(t, "quiet reported stopped", func(r *reported.HostReportedState) bool {
		return len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceStopped
	})
	waitRoute(t, rr, hostname, "quiet's route", func(rt route.Route) bool { return rt.State == route.Down })

	status, body := askHost(t, base, hostname)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "This app is not running.") {
		t.Fatalf("a stopped app answered %d %q, want 503 \"This app is not running.\"", status, body)
	}
}
