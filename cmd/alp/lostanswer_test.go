package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/devnet"
)

func TestAnApplyWhoseConnectionDropsAfterTheCallRecordsTheProposalAndNeverSubmitsTwice(t *testing.T) {
	d := startApplyDevnetOptions(t, devnet.Options{DropCalls: 1}, func(*devnet.Fleet) {})
	statePath := filepath.Join(t.TempDir(), "state.json")
	before := len(d.Governance.Proposals())
	apply := func() (string, string, error) {
		return runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes")
	}
	out, errOut, err := apply()
	if err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	if d.DroppedCalls() != 1 {
		t.Fatalf("the devnet dropped %d calls, want 1", d.DroppedCalls())
	}
	if !strings.Contains(errOut, "the outcome is unknown") || !strings.Contains(out, "the answer was lost") {
		t.Errorf("the lost answer is not said:\n%s%s", out, errOut)
	}
	made := d.Governance.Proposals()[before:]
	rec := loadStateFile(t, statePath).Proposals["add-node-08"]
	if len(made) != 1 || rec == nil || rec.ProposalID != made[0].ID.ID || rec.PayloadSHA256 != declaredHash(t, "add-node-08") {
		t.Fatalf("governance made %d proposals; state records %+v", len(made), rec)
	}

	// Run again: state.json records it, with governance's status (the
	// devnet executed it), so apply stops before anything is sent.
	if rec.Status != "executed" {
		t.Errorf("recorded status %q, want governance's executed", rec.Status)
	}
	if out, errOut, err := apply(); err == nil || !strings.Contains(err.Error(), "was submitted as proposal") {
		t.Fatalf("second apply: %v\n%s%s", err, out, errOut)
	}
	// Lose state.json too: the look-up before anything else finds it.
	if err := os.Remove(statePath); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = apply()
	if err != nil || !strings.Contains(out, "nothing was submitted again") {
		t.Fatalf("apply without its record: %v\n%s%s", err, out, errOut)
	}
	if got := len(d.Governance.Proposals()) - before; got != 1 {
		t.Fatalf("governance has %d proposals, want the one", got)
	}
	if rec := loadStateFile(t, statePath).Proposals["add-node-08"]; rec == nil || rec.ProposalID != made[0].ID.ID {
		t.Fatalf("state records %+v", rec)
	}
}
