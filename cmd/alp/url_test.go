package main

import (
	"strings"
	"testing"

	"alpnib.dev/alpage/devnet"
)

// The finding: a generated block's empty url was submitted with no
// word. plan and apply now warn at the block, saying what goes there; the
// verdict stays ready, since governance accepts an empty url.
func TestAnEmptyURLIsWarnedAtItsBlockByPlanAndApplySayingWhatGoesThere(t *testing.T) {
	startDevnetFile(t, "../../examples/fleet/fleet.json", devnet.Options{}, func(*devnet.Fleet) {})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	config := copyExampleFleet(t)
	want := config + `:10: proposal "add-node-08" has no url: governance accepts that, but voters look for its forum thread; open one on forum.dfinity.org and put its address (https://forum.dfinity.org/t/…) in url`

	out, errOut, err := runAlp(t, "", "plan", "add-node-08", "--config", config)
	if err != nil || !strings.Contains(out, "warning  "+want) || !strings.Contains(out, "add-node-08 (membership): ready") {
		t.Fatalf("plan: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = runAlp(t, "", "apply", "add-node-08", "--config", config)
	if err != nil || !strings.Contains(errOut, want) {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
}
