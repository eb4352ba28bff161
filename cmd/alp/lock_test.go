package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/state"
)

// holdState claims statePath as another alp would, for the test's length.
func holdState(t *testing.T, statePath string) {
	t.Helper()
	l, err := state.Acquire(statePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release() })
}

func TestApplySubmitsNothingWhileAnotherAlpHoldsTheState(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	holdState(t, statePath)
	before := proposalsIn(d)
	_, _, err := runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes")
	var locked *state.LockedError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), "state.json.lock") {
		t.Fatalf("apply under a held lock: %v", err)
	}
	if proposalsIn(d) != before {
		t.Fatal("apply submitted while another alp held the state")
	}
}

func TestADryRunApplyNeedsNoLock(t *testing.T) {
	startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	holdState(t, statePath)
	out, _, err := runAlp(t, "", "apply", "add-node-08", "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(out, "dry run only") {
		t.Fatalf("a dry run under a held lock: %v\n%s", err, out)
	}
}

func TestApplyLeavesNoLockBehind(t *testing.T) {
	startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	for _, stdin := range []string{"submit\n", "no\n"} {
		runAlp(t, stdin, "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes")
		if _, err := os.Stat(state.LockPath(statePath)); !os.IsNotExist(err) {
			t.Fatalf("after apply (typed %q) the lock is still there: %v", stdin, err)
		}
	}
}

func TestStatusPrintsItsReportButSaysSoWhenItCannotRecordUnderAHeldLock(t *testing.T) {
	host, dash := statusNetwork(t)
	statePath := statusState(t)
	before, _ := os.ReadFile(statePath)
	holdState(t, statePath)
	out, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath, "--host", host, "--dashboard-url", dash)
	if err == nil || !strings.Contains(err.Error(), "not recorded") || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("status under a held lock: %v", err)
	}
	if !strings.Contains(out, "add-node-08") || strings.Contains(out, "recorded ") {
		t.Fatalf("the report is missing, or claims a change it could not record:\n%s", out)
	}
	if after, _ := os.ReadFile(statePath); string(after) != string(before) {
		t.Fatal("state.json was written under another process's lock")
	}
}

func TestAnInterruptAtThePromptAbortsTheConfirmation(t *testing.T) {
	r, w := io.Pipe() // nobody ever types
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stdinConfirm{in: r, prompt: io.Discard}.Confirm(ctx, "Type submit: ") }()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "aborted") {
			t.Fatalf("Confirm after an interrupt: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Confirm kept waiting for stdin after the interrupt")
	}
}
