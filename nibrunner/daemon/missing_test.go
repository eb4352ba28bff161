package daemon

import (
	"strings"
	"testing"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func TestAnEntryWhoseVolumeTheDocumentAsksForWaitsAndOneNothingWillMakeFails(t *testing.T) {
	doc := &desired.HostDesiredState{Volumes: []desired.DesiredVolume{
		{VolumeId: "coming", AppId: "a", DesiredState: desired.Present},
		{VolumeId: "going", AppId: "b", DesiredState: desired.Absent},
	}}
	for _, c := range []struct {
		name, id, app string
		deleted       bool
		failed        bool
		says          []string
	}{
		{"listed present, not made yet", "coming", "a", false, false, []string{"waiting for volume coming to be made (volumes[0])"}},
		{"listed absent", "going", "b", false, true, []string{"volume going is asked absent (volumes[1].desiredState)", "nothing to export", "ask for it present"}},
		{"deleted and no longer listed", "gone", "c", true, true, []string{"volume gone was deleted from this host", "point this export at a volume the host holds"}},
		{"never heard of", "ghost-data", "ghost", false, true, []string{"volume ghost-data is not one of this document's volumes and this host has none", "add it to volumes with appId ghost"}},
	} {
		got := volumeMissing(doc, "export", c.id, c.app, c.deleted, "")
		if got.failed != c.failed {
			t.Errorf("%s: failed = %v, want %v (%q)", c.name, got.failed, c.failed, got.message)
		}
		for _, s := range c.says {
			if !strings.Contains(got.message, s) {
				t.Errorf("%s: %q does not say %q", c.name, got.message, s)
			}
		}
		if n := len([]rune(got.message)); n > reported.MaxMessageLen {
			t.Errorf("%s: %d characters, more than a report message holds", c.name, n)
		}
	}
	// A listed volume whose making failed: still waiting (the next pass
	// tries again), and saying why.
	if got := volumeMissing(doc, "export", "coming", "a", false, "could not be made (the next pass tries again): disk full"); got.failed ||
		got.message != "waiting for volume coming to be made (volumes[0]), which failed: could not be made (the next pass tries again): disk full" {
		t.Errorf("export of a volume that failed to be made: %+v", got)
	}
	// A checkpoint names no app.
	if got := volumeMissing(doc, "checkpoint", "ghost-data", "", false, ""); !got.failed || !strings.Contains(got.message, "add it to volumes, or point this checkpoint at a volume the host holds") {
		t.Errorf("checkpoint of an unknown volume: %+v", got)
	}
}

func TestAnExportOfAVolumeNoDocumentListsFailsNamingItUntilADocumentAddsIt(t *testing.T) {
	h := newHost(t)
	h.start(t)
	d := doc()
	d.Exports = []desired.DesiredExport{{ExportId: "e1", AppId: "ghost", VolumeId: "ghost-data", ObjectKey: "exports/ghost.tar.gz", DesiredState: desired.Present}}
	h.write(t, d)
	r := h.waitFor(t, "e1 failed", func(r *reported.HostReportedState) bool {
		return len(r.Exports) == 1 && r.Exports[0].State == reported.ExportFailed
	})
	if msg := r.Exports[0].Message; !strings.Contains(msg, "volume ghost-data is not one of this document's volumes") || !strings.Contains(msg, "add it to volumes with appId ghost") {
		t.Fatalf("message %q", msg)
	}
	// A document that lists the volume makes it, and the export is tried.
	d.Volumes = []desired.DesiredVolume{{VolumeId: "ghost-data", AppId: "ghost", SizeBytes: 1 << 20, DesiredState: desired.Present}}
	h.write(t, d)
	h.waitFor(t, "e1 tried", func(r *reported.HostReportedState) bool {
		return len(r.Exports) == 1 && !strings.Contains(r.Exports[0].Message, "not one of this document's volumes")
	})
}
