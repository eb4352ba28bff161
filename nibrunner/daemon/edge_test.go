package daemon

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot"
)

// portTables keeps every raw port table the daemon applied.
type portTables struct {
	mu     sync.Mutex
	tables [][]route.Port
}

func (p *portTables) ApplyPorts(_ context.Context, ports []route.Port) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tables = append(p.tables, append([]route.Port(nil), ports...))
	return nil
}

func (p *portTables) last() []route.Port {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tables) == 0 {
		return nil
	}
	return p.tables[len(p.tables)-1]
}

func TestRawPortsArePublishedToTheRelayAtTheGuestsTapAddress(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	pt := &portTables{}
	deps.Ports = pt
	d, _ := h.run(t, deps)
	game := h.app("game", "game-1")
	game.Config.Ports = []desired.InstancePort{{Name: "game", GuestPort: 7000}, {Name: "voice", GuestPort: 7001}}
	h.write(t, doc(game))
	h.waitFor(t, "game runs", allIn(reported.InstanceRunning, "game"))
	h.deadlineWait(t, func() bool {
		ps := pt.last()
		return len(ps) == 2 && ps[0].State == route.Up
	})
	d.mu.Lock()
	n := d.apps.byID["game"].slot
	d.mu.Unlock()
	guest := slot.Network(n).GuestIPv4.String()
	want := []route.Port{
		{AppID: "game", Index: 1, HostPort: slot.HostPort(n) + 1, Addr: guest + ":7000", State: route.Up},
		{AppID: "game", Index: 2, HostPort: slot.HostPort(n) + 2, Addr: guest + ":7001", State: route.Up},
	}
	if got := pt.last(); got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("the relay got %+v, want %+v", got, want)
	}
	// Stopped: its ports say down, and the relay unbinds them.
	game.DesiredState = desired.StateStopped
	h.write(t, doc(game))
	h.deadlineWait(t, func() bool { ps := pt.last(); return len(ps) == 2 && ps[0].State == route.Down })
}

// passes records what the daemon tells the metrics.
type passes struct {
	mu      sync.Mutex
	n       int
	last    *reported.HostReportedState
	took    time.Duration
	refused int
}

func (p *passes) Pass(d time.Duration, r *reported.HostReportedState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.last, p.took = p.n+1, r, d
}

func (p *passes) DocumentRefused() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused++
}

func (p *passes) read() (int, *reported.HostReportedState, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.last, p.refused
}

func TestEachPassAndEachRefusedDocumentAreToldToTheMetrics(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	rec := &passes{}
	deps.Metrics = rec
	h.run(t, deps)
	h.write(t, doc(h.app("shop", "shop-1")))
	h.waitFor(t, "shop runs", allIn(reported.InstanceRunning, "shop"))
	h.deadlineWait(t, func() bool {
		_, last, _ := rec.read()
		return last != nil && len(last.Instances) == 1 && last.Instances[0].State == reported.InstanceRunning
	})
	h.writeRaw(t, []byte(`{"hostId": "test-host", "instances": "not a list"}`))
	h.deadlineWait(t, func() bool { _, _, refused := rec.read(); return refused == 1 })
	// The pass after it reports the refusal, and the metrics see that report.
	h.deadlineWait(t, func() bool { _, last, _ := rec.read(); return strings.Contains(last.Message, "refused") })
}
