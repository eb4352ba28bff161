package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/state"
)

// withoutNetworkLine is a command's stderr less the line that says which
// network it talks to.
func withoutNetworkLine(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, "network: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// copyExampleFleet copies examples/fleet into a fresh folder, as the
// README's walkthrough does, and returns its proposals.hcl.
func copyExampleFleet(t *testing.T) string {
	t.Helper()
	return filepath.Join(copyFiles(t, "../../examples/fleet", "proposals.hcl", "resources.hcl"), "proposals.hcl")
}

// copyFiles copies files of folder from into a fresh folder and returns it.
func copyFiles(t *testing.T, from string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The finding: the same state.json against a new devnet read its
// proposals as unknown and refused them as executed, and nothing said the
// host had changed. Now the file records its network, and every command
// on another one refuses it naming both, before anything is read or sent.
func TestAStateRecordedOnOneDevnetIsRefusedOnAnotherNamingBoth(t *testing.T) {
	first := startDevnetFile(t, "../../examples/fleet/fleet.json", devnet.Options{}, func(*devnet.Fleet) {})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	config := copyExampleFleet(t)
	statePath := filepath.Join(filepath.Dir(config), "state.json")

	// --state defaults to the folder of --config, not the working directory
	out, errOut, err := runAlp(t, "submit\n", "apply", "add-node-08", "--yes", "--config", config)
	if err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "network: "+first.ICURL) {
		t.Errorf("apply did not say which network it talks to:\n%s", errOut)
	}
	st := loadStateFile(t, statePath)
	if st.Network == nil || st.Network.Host != first.ICURL || len(st.Network.RootKeySHA256) != 64 || st.Proposals["add-node-08"] == nil {
		t.Fatalf("state beside --config: network %+v, proposals %v", st.Network, st.Proposals)
	}
	recorded, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}

	second := startDevnetFile(t, "../../examples/fleet/fleet.json", devnet.Options{}, func(*devnet.Fleet) {})
	for _, args := range [][]string{
		{"status"},
		{"plan", "drop-node-12"},
		{"apply", "drop-node-12", "--yes"},
		{"reconcile"},
		{"plan", "--generate"},
	} {
		out, errOut, err := runAlp(t, "submit\n", append(args, "--config", config)...)
		if exitCode(err) != 1 {
			t.Fatalf("%s on another devnet: exit %d (%v), want 1\n%s%s", args[0], exitCode(err), err, out, errOut)
		}
		var foreign *state.ForeignNetworkError
		msg := err.Error()
		if !errors.As(err, &foreign) {
			t.Errorf("%v: %v is not the refusal of a foreign state", args, err)
		}
		for _, want := range []string{statePath, "records network " + first.ICURL, "talking to " + second.ICURL, "from $ALP_HOST", "--host", "--state"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%v: the refusal lacks %q: %s", args, want, msg)
			}
		}
	}
	if now, err := os.ReadFile(statePath); err != nil || string(now) != string(recorded) {
		t.Fatalf("the refused commands changed %s (%v):\n%s", statePath, err, now)
	}
}

// A file written before alp recorded networks is held to the host its
// proposals were made on.
func TestAStateWithoutANetworkIsHeldToItsProposalsHost(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	st := state.New()
	st.Proposals["add-node-08"] = &state.Proposal{Kind: "membership", ProposalID: 1, Host: "http://127.0.0.1:39167", Status: state.StatusExecuted}
	if err := st.Save(statePath); err != nil {
		t.Fatal(err)
	}
	_, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath)
	if err == nil || !strings.Contains(err.Error(), `records proposal "add-node-08" as made on http://127.0.0.1:39167`) || !strings.Contains(err.Error(), d.ICURL) {
		t.Fatalf("status of a state made on another host: %v", err)
	}
}
