package daemon

import (
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

	problem.Store("")
	h.write(t, doc())
	h.waitFor(t, "nothing left to say", func(r *reported.HostReportedState) bool { return r.Message == "" })
}
