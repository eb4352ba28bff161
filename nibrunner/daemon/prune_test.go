package daemon

import (
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func TestALayerNoDocumentNamesIsPrunedOnceItsGracePeriodEnds(t *testing.T) {
	h := newHost(t)
	h.layerGrace = 10 * time.Minute
	h.start(t)
	digest, key := h.otherLayer(t)
	a, b := h.app("a", "a1"), h.app("b", "b1")
	b.Layers[0].Digest, b.Layers[0].ObjectKey = desired.Sha256Digest(digest), desired.ObjectKey(key)
	h.write(t, doc(a, b))
	h.waitFor(t, "a and b running", allIn(reported.InstanceRunning, "a", "b"))
	cached := func(digest string) bool {
		m, _ := filepath.Glob(filepath.Join(h.dir, "cache", "objects", digest+"*"))
		return len(m) > 0
	}
	if !cached(digest) || !cached(h.layerDigest) {
		t.Fatal("the layers are not in the cache")
	}

	// b leaves the document: its layer stays for the grace period...
	h.write(t, doc(a))
	h.waitFor(t, "b forgotten", func(r *reported.HostReportedState) bool { return instance(r, "b") == nil })
	h.offset.Store(int64(5 * time.Minute))
	h.waitFor(t, "a pass five minutes on", func(r *reported.HostReportedState) bool {
		return r.ReportedAt.After(time.Now().Add(4 * time.Minute))
	})
	if !cached(digest) {
		t.Fatal("b's layer was removed within its grace period")
	}
	// ...and goes once it is over; a's layer, still named, stays.
	h.offset.Store(int64(12 * time.Minute))
	h.deadlineWait(t, func() bool { return !cached(digest) })
	if !cached(h.layerDigest) {
		t.Fatal("the layer a document still names was pruned")
	}
}
