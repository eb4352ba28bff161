package daemon

import (
	"context"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/reported"
)

// unrecorded is a document that decoded but whose recording failed (a full
// disk, a database that could not be written). It is not in force, since a
// restart would forget it, and it is not forgotten either: each pass, and
// each new reading of the same file, records it again.
type unrecorded struct {
	data   []byte
	parsed *desired.HostDesiredState
	digest string
	// warnings are its unknown properties, as reported.
	warnings []string
	// failure is the last recording error, logged once per new message.
	failure string
}

// take records doc and puts it in force, or keeps it as d.unrecorded with
// a refusal saying so. Called with d.offerMu held and d.mu not: the
// database write and the document's indexes are made outside mu, which is
// taken only to swap the result in.
func (d *Daemon) take(ctx context.Context, doc unrecorded) error {
	d.mu.Lock()
	if prev := d.unrecorded; prev != nil && prev.digest == doc.digest {
		doc.failure = prev.failure
	}
	d.mu.Unlock()
	if err := d.recordDoc(ctx, db.Accepted{Digest: doc.digest, Document: doc.data, AcceptedAt: d.now()}); err != nil {
		// Not persisted means not accepted: a restart would forget it.
		msg := err.Error()
		first := msg != doc.failure
		doc.failure = msg
		d.mu.Lock()
		d.refusal = reported.Truncate(explain.Unrecorded(err))
		d.unrecorded = &doc
		d.warnings = doc.warnings
		d.mu.Unlock()
		if !first {
			return nil // said already
		}
		return err
	}
	x := d.index(doc.parsed, doc.digest)
	d.mu.Lock()
	d.unrecorded = nil
	d.refusal = ""
	d.warnings, d.docWarnings = doc.warnings, doc.warnings
	d.setDoc(x)
	d.mu.Unlock()
	d.cfg.Logf("nibrunnerd: accepted desired.json (sha256 %s): %d instances, %d volumes", doc.digest[:12], len(doc.parsed.Instances), len(doc.parsed.Volumes))
	return nil
}

// recordAgain tries once more to record the document that could not be
// recorded, at the start of a pass, so the pass plans on it when it now
// can. An Offer under way is left to finish: it records its own reading,
// which is newer, and the pass does not wait for it.
func (d *Daemon) recordAgain(ctx context.Context) {
	if !d.offerMu.TryLock() {
		return
	}
	defer d.offerMu.Unlock()
	d.mu.Lock()
	doc := d.unrecorded
	d.mu.Unlock()
	if doc == nil {
		return
	}
	if err := d.take(ctx, *doc); err != nil {
		d.cfg.Logf("nibrunnerd: %v", err)
	}
}
