package daemon

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"alpnib.dev/nibrunner/reported"
)

func TestWhatKeepsTheDocumentsSourceFromBeingReadIsReportedUntilItCanBeAgain(t *testing.T) {
	h := newHost(t)
	var problem atomic.Value
	problem.Store("")
	h.sourceProblem = func() string { return problem.Load().(string) }
	h.start(t)
	h.write(t, doc())
	h.waitFor(t, "the document taken", func(r *reported.HostReportedState) bool { return r.AcceptedDigest != "" && r.Message == "" })

	const tooLarge = "s3://fleet/h1/desired.json (16777217 bytes) is larger than 16777216 bytes (16 MiB); the host keeps the document it has"
	problem.Store(tooLarge)
	h.waitFor(t, "the source's problem reported", func(r *reported.HostReportedState) bool { return r.Message == tooLarge })

	// A refused document as well: both are said, the source's first.
	h.writeRaw(t, []byte("{"))
	r := h.waitFor(t, "both reported", func(r *reported.HostReportedState) bool {
		return strings.Contains(r.Message, "desired.json was refused")
	})
	if !strings.HasPrefix(r.Message, tooLarge+"; desired.json was refused") {
		t.Fatalf("message %q, want the source's problem and then the refusal", r.Message)
	}

	// The object deleted: the poller removes the mirror, and the source's
	// sentence says so once, with what the host does meanwhile.
	problem.Store("")
	h.write(t, doc())
	h.waitFor(t, "nothing left to say", func(r *reported.HostReportedState) bool { return r.Message == "" })
	const gone = "s3://fleet/h1/desired.json does not exist; the host has no document to take until it does"
	problem.Store(gone)
	if err := os.Remove(h.desiredPath()); err != nil {
		t.Fatal(err)
	}
	const meanwhile = gone + " (the host keeps converging on the document it accepted before (sha256 "
	r = h.waitFor(t, "the deletion reported", func(r *reported.HostReportedState) bool { return strings.HasPrefix(r.Message, meanwhile) })
	if strings.Contains(r.Message, "no document to take (") || strings.Count(r.Message, "does not exist") != 1 {
		t.Fatalf("message %q, want the source's sentence once and what the host does meanwhile", r.Message)
	}
}
