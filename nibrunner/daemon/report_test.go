package daemon

import (
	"reflect"
	"testing"
	"time"

	"alpnib.dev/nibrunner/reported"
)

// The report renders what the daemon holds and changes none of it: when
// an instance converged is committed by the pass, so rendering a report
// for a running app whose record says it never converged leaves the
// record as it was, and the report says no convergedAt.
func TestRenderingTheReportChangesNoRecord(t *testing.T) {
	h := newHost(t)
	d, _, _ := h.start(t)
	h.write(t, doc(h.app("a", "a1")))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))

	d.passMu.Lock() // no pass commits while the report renders
	defer d.passMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	rec := d.apps.byID["a"].rec
	rec.ConvergedAt = time.Time{}
	before := *rec
	now := d.now()
	r := d.report(now, d.instanceStatuses(now), nil, nil)
	if a := instance(r, "a"); a == nil || a.State != reported.InstanceRunning || a.ConvergedAt != nil {
		t.Fatalf("the report of a running app whose record never converged: %+v", a)
	}
	if !reflect.DeepEqual(*rec, before) {
		t.Fatalf("rendering the report changed a's record:\nbefore %+v\nafter  %+v", before, *rec)
	}
}
