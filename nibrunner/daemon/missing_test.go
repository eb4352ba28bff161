package daemon

import (
	"strings"
	"testing"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

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
