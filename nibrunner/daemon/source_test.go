package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/watch"
)

// fedSource is a document source the test feeds, reading by reading.
type fedSource chan watch.Document

func (s fedSource) Run(ctx context.Context, out chan<- watch.Document) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case d := <-s:
			select {
			case out <- d:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

func TestEachReadingCarriesItsSourcesProblemAndTheReportSaysItUntilItIsGone(t *testing.T) {
	h := newHost(t)
	src := make(fedSource)
	h.source = src
	h.start(t)
	good, err := json.Marshal(doc())
	if err != nil {
		t.Fatal(err)
	}
	src <- watch.Document{Data: good}
	h.waitFor(t, "the document taken", func(r *reported.HostReportedState) bool { return r.AcceptedDigest != "" && r.Message == "" })

	// The source cannot be read: only its problem comes, and the host
	// keeps the document it has.
	const tooLarge = "s3://fleet/h1/desired.json (16777217 bytes) is larger than 16777216 bytes (16 MiB); the host keeps the document it has"
	src <- watch.Document{Problem: tooLarge}
	r := h.waitFor(t, "the source's problem reported", func(r *reported.HostReportedState) bool { return r.Message == tooLarge })
	accepted := r.AcceptedDigest

	// Readable again, with a document the host refuses; then unreadable
	// again: both are said, the source's first.
	src <- watch.Document{Data: []byte("{")}
	h.waitFor(t, "the refusal alone", func(r *reported.HostReportedState) bool {
		return strings.HasPrefix(r.Message, "desired.json was refused")
	})
	src <- watch.Document{Problem: tooLarge}
	r = h.waitFor(t, "both reported", func(r *reported.HostReportedState) bool {
		return strings.HasPrefix(r.Message, tooLarge+"; desired.json was refused")
	})
	if r.AcceptedDigest != accepted {
		t.Fatalf("the accepted document changed to %s", r.AcceptedDigest)
	}
	// The source says it is fine again, with nothing new: the refusal stays.
	src <- watch.Document{}
	h.waitFor(t, "the refusal alone again", func(r *reported.HostReportedState) bool {
		return strings.HasPrefix(r.Message, "desired.json was refused")
	})

	// The object deleted: the source's sentence says so once, with what
	// the host does meanwhile.
	src <- watch.Document{Data: good}
	h.waitFor(t, "nothing left to say", func(r *reported.HostReportedState) bool { return r.Message == "" })
	const gone = "s3://fleet/h1/desired.json does not exist; the host has no document to take until it does"
	src <- watch.Document{Err: fmt.Errorf("s3://fleet/h1/desired.json %w", watch.ErrMissing), Problem: gone}
	const meanwhile = gone + " (the host keeps converging on the document it accepted before (sha256 "
	r = h.waitFor(t, "the deletion reported", func(r *reported.HostReportedState) bool { return strings.HasPrefix(r.Message, meanwhile) })
	if strings.Contains(r.Message, "no document to take (") || strings.Count(r.Message, "does not exist") != 1 {
		t.Fatalf("message %q, want the source's sentence once and what the host does meanwhile", r.Message)
	}
}
