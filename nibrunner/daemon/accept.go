package daemon

import (
	"context"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
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
	// failure is the last recording error, logged once per new message.
	failure string
}

// take records doc and puts it in force, or keeps it as d.unrecorded with
// a refusal saying so. Called with d.mu held.
func (d *Daemon) take(ctx context.Context, doc unrecorded) error {
	if prev := d.unrecorded; prev != nil && prev.digest == doc.digest {
		doc.failure = prev.failure
	}
	if err := d.recordDoc(ctx, db.Accepted{Digest: doc.digest, Document: doc.data, AcceptedAt: d.now()}); err != nil {
		// Not persisted means not accepted: a restart would forget it.
		d.refusal = reported.Truncate("desired.json could not be recorded, so it is not taken yet (it is tried again at every pass, and whenever the file is written): " + err.Error())
		msg := err.Error()
		first := msg != doc.failure
		doc.failure = msg
		d.unrecorded = &doc
		if !first {
			return nil // said already
		}
		return err
	}
	d.unrecorded = nil
	d.refusal = ""
	d.setDoc(doc.parsed, doc.digest)
	d.cfg.Logf("nibrunnerd: accepted desired.json (sha256 %s): %d instances, %d volumes", doc.digest[:12], len(doc.parsed.Instances), len(doc.parsed.Volumes))
	return nil
}

// recordAgain tries once more to record the document that could not be
// recorded, at the start of a pass, so the pass plans on it when it now
// can.
func (d *Daemon) recordAgain(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unrecorded == nil {
		return
	}
	if err := d.take(ctx, *d.unrecorded); err != nil {
		d.cfg.Logf("nibrunnerd: %v", err)
	}
}
