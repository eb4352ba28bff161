package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"alpnib.dev/alpage/state"
)

// decodeOne decodes stdout as exactly one JSON object into v, so nothing
// meant for a person leaked onto it.
func decodeOne(t *testing.T, stdout string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if dec.More() || strings.TrimSpace(stdout[dec.InputOffset():]) != "" {
		t.Fatalf("stdout holds more than one JSON object:\n%s", stdout)
	}
}

func TestApplyJSONReportsEachOutcomeWithTheSummaryOnStderr(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	args := []string{"apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--output", "json"}

	stdout, stderr, err := runAlp(t, "", args...)
	var dry applyJSON
	decodeOne(t, stdout, &dry)
	if err != nil || dry.Outcome != "dry-run-only" || dry.Name != "add-node-08" || dry.Kind != "membership" ||
		dry.PayloadSHA256 != declaredHash(t, "add-node-08") || dry.Principal != d.Identity.String() || dry.Neuron != 4242 || dry.NeuronAccess != "controller" || dry.Host != d.ICURL {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if !strings.Contains(stderr, "payload:  sha256 "+dry.PayloadSHA256) {
		t.Errorf("the summary is not on stderr:\n%s", stderr)
	}

	stdout, _, err = runAlp(t, "submit\n", append(args, "--yes")...)
	var sub applyJSON
	decodeOne(t, stdout, &sub)
	rec := loadStateFile(t, statePath).Proposals["add-node-08"]
	if err != nil || sub.Outcome != "submitted" || rec == nil || sub.ProposalID != rec.ProposalID || sub.NeuronAccess != "controller" {
		t.Fatalf("submit: %v %+v, recorded %+v", err, sub, rec)
	}

	stdout, _, err = runAlp(t, "submit\n", append(args, "--yes")...)
	var again applyJSON
	decodeOne(t, stdout, &again)
	if err != nil || again.Outcome != "nothing-to-do" || again.ProposalID != rec.ProposalID || again.Reason == "" {
		t.Fatalf("again: %v %+v", err, again)
	}

	st := loadStateFile(t, statePath)
	st.Proposals["add-node-08"].PayloadSHA256 = strings.Repeat("ab", 32)
	if err := st.Save(statePath); err != nil {
		t.Fatal(err)
	}
	stdout, _, err = runAlp(t, "submit\n", append(args, "--yes")...)
	var stopped applyJSON
	decodeOne(t, stdout, &stopped)
	if exitCode(err) != 2 || stopped.Outcome != "stopped" || !strings.Contains(stopped.Reason, "--force") {
		t.Fatalf("changed payload: exit %d (%v) %+v", exitCode(err), err, stopped)
	}
}

func TestImportJSONSaysWhatWasRecordedAndFromWhere(t *testing.T) {
	startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	if _, _, err := runAlp(t, "submit\n", "apply", "halt-app1", "--config", applyConfig, "--state", statePath, "--yes"); err != nil {
		t.Fatal(err)
	}
	id := loadStateFile(t, statePath).Proposals["halt-app1"].ProposalID
	other := filepath.Join(t.TempDir(), "state.json")
	stdout, _, err := runAlp(t, "", "import", "halt-app1", strconv.FormatUint(id, 10), "--config", applyConfig, "--state", other, "--output", "json")
	var got importJSON
	decodeOne(t, stdout, &got)
	if err != nil || got.Name != "halt-app1" || got.ProposalID != id || got.Kind != "update_subnet" || got.Source != "governance" ||
		got.Status != string(state.StatusExecuted) || got.Neuron != 4242 || got.PayloadSHA256 != declaredHash(t, "halt-app1") || got.Warnings == nil || len(got.Warnings) != 0 {
		t.Fatalf("import: %v %+v", err, got)
	}
	if !bytes.Contains([]byte(stdout), []byte(`"warnings": []`)) {
		t.Errorf("no warnings must read as an empty list:\n%s", stdout)
	}
}

func TestEveryReportingCommandOffersJSON(t *testing.T) {
	for _, path := range [][]string{{"list"}, {"plan"}, {"apply"}, {"import"}, {"status"}, {"registry", "subnet"}, {"guestos", "sync"}, {"keygen"}} {
		cmd, _, err := newRootCmd().Find(path)
		if err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		if f := cmd.Flags().Lookup("output"); f == nil || f.Shorthand != "o" {
			t.Errorf("alp %s has no --output/-o", strings.Join(path, " "))
		}
	}
}
