package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/vmm"
)

// prober runs one up guest's health check in its own goroutine and keeps
// the state machine's record; the pass reads it. A change of state is
// published at once (the route of a guest that became healthy goes up, a
// wake waiting on it returns) and kicks a pass, which reports it.
type prober struct {
	cancel context.CancelFunc
	done   chan struct{}

	check    health.Check
	kind     desired.HealthCheckKind
	endpoint string
	path     string
	port     int
	timeout  time.Duration

	clock clock.Clock

	// mu guards rec and starved, which the prober's goroutine writes and
	// the pass, the report and a wake read. It is a leaf (taken under
	// Daemon.mu at most) and no probe or other I/O happens under it.
	mu      sync.Mutex
	rec     health.Record
	starved bool // the last probe could not be made: no descriptors
	logf    func(format string, args ...any)
}

// probeClient never keeps connections: a thousand guests probed from one
// process would otherwise hold a thousand idle sockets.
var probeClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// startProber starts a's prober for its guest st (mu held).
func (ps *apps) startProber(a *app, st vmm.Status) {
	ps.stopProber(a)
	app, rec := a.id, a.rec
	spec := plan.ProbeOf(ps.host.instance(app), st.DeploymentID)
	p := &prober{
		kind:     spec.Kind,
		endpoint: st.Endpoint,
		path:     spec.Path,
		port:     spec.Port,
		check:    spec.Check,
		timeout:  spec.Timeout,
		rec:      rec.Health,
		done:     make(chan struct{}),
		logf:     ps.cfg.Logf,
		clock:    ps.cfg.Clock,
	}
	if p.rec.State == "" || p.rec.StartedAt.IsZero() {
		p.rec = health.Started(st.StartedAt)
	}
	cancel, ok := ps.probers.Go(func(ctx context.Context) {
		p.run(ctx, func() { ps.proberChanged(app, p) })
	})
	if !ok {
		return // the daemon closes
	}
	p.cancel = cancel
	a.prober = p
}

// stopProber stops a's prober (mu held). It does not wait for the
// goroutine, which may be waiting for mu to report a change: a change from
// a prober that is no longer the app's is ignored (proberChanged), and
// Close waits for every prober to end (the probers' pool).
func (ps *apps) stopProber(a *app) {
	if a.prober != nil {
		a.prober.stop()
		a.prober = nil
	}
}

func (p *prober) stop() { p.cancel() }

// proberChanged publishes a change of app's health as p saw it.
func (ps *apps) proberChanged(app string, p *prober) {
	ps.mu.Lock()
	a := ps.byID[app]
	if a == nil || a.prober != p {
		ps.mu.Unlock()
		return
	}
	a.signal()
	ps.host.publishLocked()
	ps.mu.Unlock()
	ps.host.routesChanged()
	ps.host.Kick()
}

func (p *prober) record() health.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rec
}

// live is the guest's health as p sees it now and, when it failed or is
// unhealthy, why: the report and a wake read it before a pass records it.
func (p *prober) live() (health.State, string) {
	st := p.record().State
	if st != health.Failed && st != health.Unhealthy {
		return st, ""
	}
	return st, p.failureMessage()
}

func (p *prober) failureMessage() string {
	p.mu.Lock()
	n := p.rec.Failures
	p.mu.Unlock()
	return explain.FailedProbes(string(p.kind), p.port, p.path, n, p.check.Grace)
}

func (p *prober) run(ctx context.Context, kick func()) {
	defer close(p.done)
	t := p.clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		ok, err := p.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		changed, state := p.observe(ok, err)
		if changed {
			kick()
		}
		t.Reset(p.check.ProbeInterval(state))
	}
}

// observe feeds one probe's result to the health record and says whether
// the state changed. A probe the daemon could not make because it is
// itself out of file descriptors (EMFILE, ENFILE: a flood of client
// connections, say) says nothing of the app and is not counted: an app
// ended failed for the host's exhaustion would lose its restarts.
func (p *prober) observe(ok bool, err error) (changed bool, state health.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok && outOfFiles(err) {
		if !p.starved {
			p.starved = true
			p.logf("nibrunnerd: health probe of %s: the daemon is out of file descriptors (%v); the probe is not counted against the app", p.endpoint, err)
		}
		return false, p.rec.State
	}
	p.starved = false
	prev := p.rec.State
	p.rec = health.Step(p.check, p.rec, health.Input{Active: true, Probe: &ok, Now: p.clock.Now().UTC()})
	return p.rec.State != prev, p.rec.State
}

// outOfFiles reports whether err is the daemon's own lack of descriptors.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// probe runs the check once: whether the app passed, and when it did
// not, why (nil when the app answered, but not as asked).
func (p *prober) probe(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	switch p.kind {
	case desired.HealthHTTP:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.endpoint+p.path, nil)
		if err != nil {
			return false, err
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return false, err
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 300, nil
	case desired.HealthBootCompleted:
		// Once the tenant accepted a connection, liveness is the VM being
		// up, which the pass watches.
		p.mu.Lock()
		ever := p.rec.EverHealthy
		p.mu.Unlock()
		if ever {
			return true, nil
		}
		fallthrough
	default:
		return tcpProbe(ctx, p.endpoint)
	}
}

// tcpSettle is how long a probe keeps an accepted connection open to tell a
// listener from a forwarder that accepts for it.
const tcpSettle = 150 * time.Millisecond

// tcpAnswers reports whether something listens at endpoint. A connect alone
// is not proof: QEMU's user-mode network accepts on the host port for the
// guest and resets the connection once the guest refuses it. So the
// connection is held briefly: still open (or sending a banner) is a
// listener; reset or closed at once is nobody.
func tcpAnswers(ctx context.Context, endpoint string) bool {
	ok, _ := tcpProbe(ctx, endpoint)
	return ok
}

// tcpProbe is tcpAnswers with the dial's error, when it failed.
func tcpProbe(ctx context.Context, endpoint string) (bool, error) {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return false, err
	}
	defer c.Close()
	// A socket's deadline is the kernel's, on the machine's clock.
	deadline := time.Now().Add(tcpSettle)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetReadDeadline(deadline)
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout(), nil
	}
	return true, nil
}
