package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/watch"
)

// withTypo is the document with "memoryMB" beside each instance's
// memoryMib, as JSON; without keep, memoryMib is dropped, so the typo
// leaves a required field missing.
func withTypo(t *testing.T, h *host, keep bool) []byte {
	t.Helper()
	b, _ := json.Marshal(doc(h.app("a", "a1")))
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	res := tree["instances"].([]any)[0].(map[string]any)["config"].(map[string]any)["resources"].(map[string]any)
	res["memoryMB"] = 512
	if !keep {
		delete(res, "memoryMib")
	}
	out, _ := json.Marshal(tree)
	return out
}

const memoryTypo = "instances[0].config.resources.memoryMB: unknown property, ignored: did you mean memoryMib?"

func TestTheReportListsTheUnknownPropertiesOfTheDocumentRead(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := Open(ctx, h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	offer := func(b []byte) {
		t.Helper()
		h.writeRaw(t, b)
		if err := d.Offer(ctx, watch.Document{Data: b}); err != nil {
			t.Fatal(err)
		}
		if err := d.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}

	accepted := withTypo(t, h, true)
	offer(accepted)
	r := h.readReport(t)
	if r.AcceptedDigest == "" || strings.Join(r.Warnings, "\n") != memoryTypo {
		t.Fatalf("accepted %q with warnings %q; want the document accepted and warned of", r.AcceptedDigest, r.Warnings)
	}
	if !strings.Contains(h.log.String(), "warning: "+memoryTypo) {
		t.Fatalf("the daemon's log does not warn of the typo:\n%s", h.log.String())
	}

	// The same typo with memoryMib gone: refused whole, as the seed says,
	// and the warning says why memoryMib is missing.
	offer(withTypo(t, h, false))
	r = h.readReport(t)
	if !strings.Contains(r.Message, "memoryMib: is required") || strings.Join(r.Warnings, "\n") != memoryTypo {
		t.Fatalf("refused with message %q and warnings %q", r.Message, r.Warnings)
	}

	// The document in force written back: its own warnings again.
	offer(accepted)
	if r = h.readReport(t); r.Message != "" || strings.Join(r.Warnings, "\n") != memoryTypo {
		t.Fatalf("back to the accepted document: message %q, warnings %q", r.Message, r.Warnings)
	}

	// A restart reads the document in force from the database, typo and all.
	d.Close()
	if d, err = Open(ctx, h.config(), deps); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if r = h.readReport(t); strings.Join(r.Warnings, "\n") != memoryTypo {
		t.Fatalf("after a restart the warnings are %q", r.Warnings)
	}

	// Fixed: the report has no warnings, and the field is left out.
	fixed, _ := json.Marshal(doc(h.app("a", "a1")))
	offer(fixed)
	if r = h.readReport(t); r.Warnings != nil {
		t.Fatalf("a document with no unknown property still has warnings %q", r.Warnings)
	}
}
