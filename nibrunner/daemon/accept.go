package daemon

import (
	"context"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/reported"
)

// docState is the accepted document, and what the daemon says of the last
// reading of desired.json. Every field but record is guarded by
// Daemon.mu.
type docState struct {
	// record writes an accepted document: db.SetAccepted, or a failing
	// store in tests. Immutable after Open.
	record func(context.Context, db.Accepted) error

	// doc is the accepted document (nil before one), digest its sha256,
	// byApp its instances by app, and problems why instances are failed
	// by the document itself (index).
	doc      *desired.HostDesiredState
	digest   string
	byApp    map[string]*desired.DesiredInstance
	problems map[string]string
	// refusal is why the last reading was not taken ("" when it was).
	refusal string
	// warnings are the unknown properties of the last document read, and
	// docWarnings those of the document in force (reported.WarningsOf).
	warnings, docWarnings []string
	// unrecorded is a document accepted but not yet recorded (the
	// database write failed): each pass tries it again.
	unrecorded *unrecorded
	// noDocument: the refusal is that there is no desired.json to read.
	noDocument bool
	// sourceProblem is what the last reading's source said of itself
	// (watch.Document.Problem).
	sourceProblem string
}

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

// take records doc and puts it in force, or keeps it as d.acc.unrecorded with
// a refusal saying so. Called with d.offerMu held and d.mu not: the
// database write and the document's indexes are made outside mu, which is
// taken only to swap the result in.
func (d *Daemon) take(ctx context.Context, doc unrecorded) error {
	d.mu.Lock()
	if prev := d.acc.unrecorded; prev != nil && prev.digest == doc.digest {
		doc.failure = prev.failure
	}
	d.mu.Unlock()
	if err := d.acc.record(ctx, db.Accepted{Digest: doc.digest, Document: doc.data, AcceptedAt: d.now()}); err != nil {
		// Not persisted means not accepted: a restart would forget it.
		msg := err.Error()
		first := msg != doc.failure
		doc.failure = msg
		d.mu.Lock()
		d.acc.refusal = reported.Truncate(explain.Unrecorded(err))
		d.acc.unrecorded = &doc
		d.acc.warnings = doc.warnings
		d.mu.Unlock()
		if !first {
			return nil // said already
		}
		return err
	}
	x := d.index(doc.parsed, doc.digest)
	d.mu.Lock()
	d.acc.unrecorded = nil
	d.acc.refusal = ""
	d.acc.warnings, d.acc.docWarnings = doc.warnings, doc.warnings
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
	doc := d.acc.unrecorded
	d.mu.Unlock()
	if doc == nil {
		return
	}
	if err := d.take(ctx, *doc); err != nil {
		d.cfg.Logf("nibrunnerd: %v", err)
	}
}
