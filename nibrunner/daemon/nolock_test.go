package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/watch"
)

// failsafe bounds how long these tests wait for what must happen while
// something else is held: it turns a wake that waits behind the held
// thing into a failure rather than a hung test. Nothing is timed by it.
const failsafe = time.Minute

// wakeWhile wakes app and fails the test unless the wake answers, without
// error, while whatever the test holds is still held.
func wakeWhile(t *testing.T, d *Daemon, app, held string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- d.Wake(ctx, app) }()
	select {
	case err := <-woke:
		if err != nil {
			t.Fatalf("the wake of %s while %s answered %v", app, held, err)
		}
	case <-time.After(failsafe + 10*time.Second):
		t.Fatalf("the wake of %s waited for %s (it did not answer, even when its context ended)", app, held)
	}
}

func TestAWakeIsNotHeldUpByALargeDocumentBeingRecorded(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	// The database write of a large document waits until the test lets
	// it go: the wake below happens while a 16 MiB document is decoded,
	// hashed and being recorded.
	entered, release := make(chan struct{}), make(chan struct{})
	record := d.acc.record
	d.acc.record = func(ctx context.Context, acc db.Accepted) error {
		if len(acc.Document) > 1<<20 {
			close(entered)
			<-release
		}
		return record(ctx, acc)
	}
	h.runOpened(t, d)
	// Let go before the daemon is stopped, even when the test failed.
	var freed sync.Once
	free := func() { freed.Do(func() { close(release) }) }
	t.Cleanup(free)
	web := h.app("web", "web-1")
	h.write(t, doc(web))
	h.waitFor(t, "web runs", allIn(reported.InstanceRunning, "web"))

	small, err := json.Marshal(doc(web))
	if err != nil {
		t.Fatal(err)
	}
	// The same document, padded with whitespace to the largest a
	// document may be.
	big := append(small[:len(small)-1:len(small)-1], bytes.Repeat([]byte{' '}, desired.MaxDocumentBytes-len(small))...)
	big = append(big, '}')
	offered := make(chan error, 1)
	go func() { offered <- d.Offer(context.Background(), watch.Document{Data: big}) }()
	select {
	case <-entered:
	case err := <-offered:
		t.Fatalf("the 16 MiB document was never recorded: Offer answered %v", err)
	}
	wakeWhile(t, d, "web", "a 16 MiB document was being recorded")
	select {
	case err := <-offered:
		t.Fatalf("Offer returned (%v) before its record was let go", err)
	default:
	}
	free()
	if err := <-offered; err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(big)
	want := hex.EncodeToString(sum[:])
	h.waitFor(t, "the large document accepted", func(r *reported.HostReportedState) bool { return string(r.AcceptedDigest) == want })
}

// heldPorts is a raw relay whose first bind of a port waits until the
// test lets it go.
type heldPorts struct {
	portTables
	once             sync.Once
	entered, release chan struct{}
}

func (p *heldPorts) ApplyPorts(ctx context.Context, ports []route.Port) error {
	if len(ports) > 0 {
		p.once.Do(func() {
			close(p.entered)
			select {
			case <-p.release:
			case <-ctx.Done():
			}
		})
	}
	return p.portTables.ApplyPorts(ctx, ports)
}

func TestAWakeIsNotHeldUpByARawPortBeingBound(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	hp := &heldPorts{entered: make(chan struct{}), release: make(chan struct{})}
	deps.Ports = hp
	h.run(t, deps)
	var freed sync.Once
	free := func() { freed.Do(func() { close(hp.release) }) }
	t.Cleanup(free)
	// game's raw port is bound by the pass that gives both apps their
	// slots, before either starts; web, started by that pass, is woken
	// while the bind is held.
	game := h.app("game", "game-1")
	game.Config.Ports = []desired.InstancePort{{Name: "game", GuestPort: 7000}}
	web := h.app("web", "web-1")
	h.write(t, doc(game, web))
	select {
	case <-hp.entered:
	case <-time.After(failsafe):
		t.Fatal("game's raw port was never bound")
	}
	// The pass goes on without waiting for the bind: it starts web.
	d := h.daemon.Load()
	if !h.until(t, failsafe, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		a := d.apps.byID["web"]
		return a != nil && (a.busy || a.up())
	}) {
		t.Fatal("web was not started while game's raw port was being bound")
	}
	wakeWhile(t, d, "web", "a raw port was being bound")
	free()
	h.deadlineWait(t, func() bool { ps := hp.last(); return len(ps) == 1 && ps[0].AppID == "game" && ps[0].State == route.Up })
}
