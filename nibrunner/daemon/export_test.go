package daemon

import (
	"testing"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm/fake"
)

// The harness, opened to the external tests (package daemon_test), which
// import nibrunner/proxy and so cannot live in package daemon.

// Host is a test host (see harness_test.go).
type Host = host

// NewHost returns a test host in a fresh folder.
func NewHost(t testing.TB) *Host { return newHost(t) }

// App is a running app on the host's layer, its tenant environment kv.
func (h *host) App(name, deployment string, kv ...string) desired.DesiredInstance {
	return h.app(name, deployment, withEnv(kv...))
}

// Write writes desired.json running instances, each with its own volume.
func (h *host) Write(t testing.TB, instances ...desired.DesiredInstance) {
	h.write(t, doc(instances...))
}

// WaitFor polls reported.json until cond holds.
func (h *host) WaitFor(t testing.TB, what string, cond func(*reported.HostReportedState) bool) *reported.HostReportedState {
	return h.waitFor(t, what, cond)
}

// StartRouted opens and runs a daemon on the fake VMM (child-process
// guests) that routes and measures through router and traffic, until the
// test ends.
func (h *host) StartRouted(t *testing.T, router Router, traffic Traffic) (*Daemon, *fake.VMM) {
	t.Helper()
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	deps.Router, deps.Traffic = router, traffic
	d, _ := h.run(t, deps)
	return d, v
}
