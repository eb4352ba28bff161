package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The finding: --yes still asked for a typed word, and in CI only
// `echo submit |` worked. --auto-approve (also Terraform's -auto-approve)
// submits with nothing on stdin and says so.
func TestAutoApproveSubmitsWithoutATypedWordAsInCI(t *testing.T) {
	for _, spelling := range []string{"--auto-approve", "-auto-approve"} {
		t.Run(spelling, func(t *testing.T) {
			d := startApplyDevnet(t)
			statePath := filepath.Join(t.TempDir(), "state.json")
			before := proposalsIn(d)
			out, errOut, err := runAlp(t, "", "apply", "add-node-08", spelling, "--config", applyConfig, "--state", statePath)
			if err != nil {
				t.Fatalf("apply %s: %v\n%s%s", spelling, err, out, errOut)
			}
			if proposalsIn(d) != before+1 || loadStateFile(t, statePath).Proposals["add-node-08"] == nil {
				t.Fatalf("nothing was submitted and recorded:\n%s%s", out, errOut)
			}
			if !strings.Contains(errOut, "approved by --auto-approve") || strings.Contains(errOut, "Type submit") {
				t.Errorf("stderr does not say it was auto-approved, or asked:\n%s", errOut)
			}
		})
	}
}

// On a terminal someone could be there to type: --auto-approve alone is
// refused before anything is read or sent.
func TestAutoApproveOnATerminalIsRefusedUnlessYesIsGivenToo(t *testing.T) {
	d := startApplyDevnet(t)
	_, tty := openPTY(t)
	before := proposalsIn(d)
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(tty)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"apply", "add-node-08", "--auto-approve", "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "state.json")})
	err := root.Execute()
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "on a terminal give --yes too") {
		t.Fatalf("--auto-approve on a terminal: %v\n%s%s", err, out.String(), errOut.String())
	}
	if proposalsIn(d) != before {
		t.Fatal("a proposal was made")
	}
}
