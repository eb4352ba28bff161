package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/state"
)

var update = flag.Bool("update", false, "rewrite golden files")

const fixture = "../../alpage/config/testdata/fleet/proposals.hcl"

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s:\n%s\nwant:\n%s", path, got, want)
	}
}

// stateWith writes a state file recording add-n2 in sync, drop-n3
// (executed) with a payload the config no longer declares, and halt-app1
// (open) likewise.
func stateWith(t *testing.T) string {
	t.Helper()
	return writeListState(t, true)
}

func writeListState(t *testing.T, withOpenDrift bool) string {
	t.Helper()
	inSync := declaredIn(t, fixture, "add-n2")
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	st := state.New()
	st.Proposals["add-n2"] = &state.Proposal{Kind: "membership", ProposalID: 101, PayloadSHA256: inSync.PayloadSHA256, Neuron: 42, SubmittedAt: state.TimeOf(at), Status: state.StatusOpen}
	st.Proposals["drop-n3"] = &state.Proposal{Kind: "remove_nodes", ProposalID: 102, PayloadSHA256: "0000000000000000000000000000000000000000000000000000000000000000", Neuron: 42, SubmittedAt: state.TimeOf(at), Status: state.StatusExecuted, ResolvedAt: state.TimeOf(at)}
	if withOpenDrift {
		st.Proposals["halt-app1"] = &state.Proposal{Kind: "update_subnet", ProposalID: 103, PayloadSHA256: "1111111111111111111111111111111111111111111111111111111111111111", Neuron: 42, SubmittedAt: state.TimeOf(at), Status: state.StatusOpen}
	}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestListShowsNotSubmittedInSyncDriftAndSettledAndExitsTwoOnDrift(t *testing.T) {
	out, err := execute(t, "list", "--config", fixture, "--state", stateWith(t))
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "1 proposal(s) drifted") {
		t.Fatalf("exit code %d (%v), want 2 for the one drift", exitCode(err), err)
	}
	golden(t, "list.golden", []byte(out))
}

func TestASettledProposalWhoseConfigChangedIsANoteNotDrift(t *testing.T) {
	out, err := execute(t, "list", "--config", fixture, "--state", writeListState(t, false))
	if err != nil {
		t.Fatalf("exit %d (%v), want 0: drop-n3 executed, its payload is immutable\n%s", exitCode(err), err, out)
	}
	if !strings.Contains(out, "settled (config has since changed; payload is immutable)") || strings.Contains(out, "DRIFT") {
		t.Fatalf("list:\n%s", out)
	}
}

func TestListWithoutStateIsAllNotSubmittedAndExitsZero(t *testing.T) {
	out, err := execute(t, "list", "--config", fixture, "--state", filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if bytes.Contains([]byte(out), []byte("DRIFT")) || !bytes.Contains([]byte(out), []byte("not submitted")) {
		t.Fatalf("unexpected:\n%s", out)
	}
}

func TestListJSONGivesNameKindPayloadHashAndRecordedState(t *testing.T) {
	out, _ := execute(t, "list", "--config", fixture, "--state", stateWith(t), "--output", "json")
	var rows []struct {
		Name          string
		Kind          string
		PayloadSHA256 string `json:"payload_sha256"`
		Sync          string
		State         *state.Proposal
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want one per declared proposal", len(rows))
	}
	for _, r := range rows {
		if r.Name == "" || r.Kind == "" || len(r.PayloadSHA256) != 64 {
			t.Errorf("row lacks name, kind or payload hash: %+v", r)
		}
		if r.Name == "add-n2" && (r.State == nil || r.State.ProposalID != 101 || r.Sync != "in sync") {
			t.Errorf("add-n2 = %+v", r)
		}
	}
}

func TestListRefusesABrokenConfigWithItsPlace(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "proposals.hcl"), []byte("proposal \"x\" {\n  kind = \"nope\"\n  title = \"t\"\n}\n"), 0o644)
	_, err := execute(t, "list", "--config", filepath.Join(dir, "proposals.hcl"))
	if exitCode(err) != 1 || err == nil || !bytes.Contains([]byte(err.Error()), []byte("proposals.hcl:2:")) {
		t.Fatalf("err = %v", err)
	}
}

func TestAProposalStateRecordsButNoBlockDeclaresIsListedAsNotDeclaredNotDrift(t *testing.T) {
	st := state.New()
	st.Proposals["renamed-since"] = &state.Proposal{Kind: "membership", ProposalID: 77, PayloadSHA256: "ab", Status: state.StatusExecuted}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "list", "--config", fixture, "--state", path)
	if err != nil {
		t.Fatalf("exit %d (%v), want 0: a proposal no block declares is not drift\n%s", exitCode(err), err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"renamed-since", "membership", "not declared", "77", "executed"} {
		if !strings.Contains(last, want) {
			t.Fatalf("last line %q lacks %q:\n%s", last, want, out)
		}
	}
	out, _ = execute(t, "list", "--config", fixture, "--state", path, "--output", "json")
	if !strings.Contains(out, `"sync": "not declared"`) || !strings.Contains(out, `"proposal_id": 77`) {
		t.Fatalf("json lacks the undeclared proposal:\n%s", out)
	}
}

func TestARecordOfAnotherKindWithTheSameHashIsListedAsDriftNamingBothKinds(t *testing.T) {
	st := state.New()
	st.Proposals["add-n2"] = &state.Proposal{Kind: "remove_nodes", ProposalID: 101, PayloadSHA256: declaredIn(t, fixture, "add-n2").PayloadSHA256, Status: state.StatusOpen}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "list", "--config", fixture, "--state", path)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "1 proposal(s) drifted") {
		t.Fatalf("exit %d (%v), want 2 for the record of another kind\n%s", exitCode(err), err, out)
	}
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "add-n2 ") {
			row = line
		}
	}
	for _, want := range []string{"DRIFT", `state.json records proposal "add-n2" as kind remove_nodes, its block declares membership`, "restore it from git"} {
		if !strings.Contains(row, want) {
			t.Errorf("add-n2's row does not say %q:\n%s", want, out)
		}
	}
}
