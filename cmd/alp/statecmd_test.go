package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoRecorded is a state.json recording two proposals, one with a field
// alp does not know, which every command must keep.
const twoRecorded = `{
  "proposals": {
    "upgrade-app1": {
      "kind": "deploy_guestos",
      "proposal_id": 12,
      "payload_sha256": "` + "aa" + `",
      "submitted_by": "me",
      "neuron": 7,
      "host": "https://icp-api.io",
      "submitted_at": "2026-12-01T10:00:00Z",
      "status": "executed",
      "reviewed_by": "the on-call"
    },
    "add-node-08": {
      "kind": "membership",
      "proposal_id": 11,
      "payload_sha256": "bb",
      "submitted_by": "me",
      "neuron": 7,
      "host": "https://icp-api.io",
      "submitted_at": "2026-12-01T09:00:00Z",
      "status": "open"
    }
  }
}
`

func writeTwoRecorded(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte(twoRecorded), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStateListPrintsEachRecordedNameSorted(t *testing.T) {
	out, _, err := runAlp(t, "", "state", "list", "--state", writeTwoRecorded(t))
	if err != nil || out != "add-node-08\nupgrade-app1\n" {
		t.Fatalf("state list: exit %d (%v), printed %q", exitCode(err), err, out)
	}
}

func TestStateListFollowsTheFolderOfConfig(t *testing.T) {
	path := writeTwoRecorded(t)
	out, _, err := runAlp(t, "", "state", "list", "--config", filepath.Join(filepath.Dir(path), "proposals.hcl"))
	if err != nil || out != "add-node-08\nupgrade-app1\n" {
		t.Fatalf("state list: exit %d (%v), printed %q", exitCode(err), err, out)
	}
}

func TestStateShowPrintsTheRecordWithTheFieldsAlpDoesNotKnow(t *testing.T) {
	out, _, err := runAlp(t, "", "state", "show", "upgrade-app1", "--state", writeTwoRecorded(t))
	if err != nil {
		t.Fatalf("state show: %v", err)
	}
	for _, want := range []string{`"kind": "deploy_guestos"`, `"proposal_id": 12`, `"status": "executed"`, `"reviewed_by": "the on-call"`} {
		if !strings.Contains(out, want) {
			t.Errorf("state show lacks %s:\n%s", want, out)
		}
	}
}

func TestStateShowOfAnUnrecordedNameExitsOneAndNamesWhatIsRecorded(t *testing.T) {
	path := writeTwoRecorded(t)
	_, _, err := runAlp(t, "", "state", "show", "drop-node-12", "--state", path)
	want := path + ` records no proposal "drop-node-12"; it records: add-node-08, upgrade-app1`
	if exitCode(err) != 1 || err == nil || err.Error() != want {
		t.Fatalf("exit %d (%v), want 1 and %q", exitCode(err), err, want)
	}
}

func TestStateRmWithoutANameRemovesNothingAndSaysWhatItNeeds(t *testing.T) {
	path := writeTwoRecorded(t)
	_, _, err := runAlp(t, "remove\n", "state", "rm", "--state", path)
	if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "state rm needs the name of each proposal to forget") {
		t.Fatalf("exit %d (%v), want 1 and what rm needs", exitCode(err), err)
	}
	unchanged(t, path)
}

func TestStateRmOfAnUnrecordedNameRemovesNothing(t *testing.T) {
	path := writeTwoRecorded(t)
	_, _, err := runAlp(t, "remove\n", "state", "rm", "add-node-08", "drop-node-12", "--state", path)
	if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), `records no proposal "drop-node-12"`) || !strings.Contains(err.Error(), "nothing was removed") {
		t.Fatalf("exit %d (%v), want 1 naming drop-node-12", exitCode(err), err)
	}
	unchanged(t, path)
}

func TestStateRmAsksAndRemovesNothingUnlessRemoveIsTyped(t *testing.T) {
	for _, stdin := range []string{"", "yes\n"} {
		path := writeTwoRecorded(t)
		_, errOut, err := runAlp(t, stdin, "state", "rm", "upgrade-app1", "--state", path)
		if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "aborted") {
			t.Fatalf("stdin %q: exit %d (%v), want 1, aborted", stdin, exitCode(err), err)
		}
		if !strings.Contains(errOut, "upgrade-app1: deploy_guestos proposal 12, executed") || !strings.Contains(errOut, "Type remove to confirm") {
			t.Errorf("stdin %q: rm did not show what it removes and ask:\n%s", stdin, errOut)
		}
		unchanged(t, path)
	}
}

func TestStateRmRemovesTheRecordKeepsTheRestAndABackup(t *testing.T) {
	path := writeTwoRecorded(t)
	if _, errOut, err := runAlp(t, "remove\n", "state", "rm", "upgrade-app1", "--state", path); err != nil {
		t.Fatalf("state rm: %v\n%s", err, errOut)
	}
	if out, _, err := runAlp(t, "", "state", "list", "--state", path); err != nil || out != "add-node-08\n" {
		t.Errorf("after rm, state list: %v, %q", err, out)
	}
	if b, err := os.ReadFile(path + ".backup"); err != nil || string(b) != twoRecorded {
		t.Errorf("the backup is not the file as it was (%v):\n%s", err, b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state.json lost its permissions: %v %v", fi.Mode(), err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(m) != 2 {
		t.Errorf("rm left files besides state.json and its backup: %v", m)
	}
}

func TestStateRmAutoApproveRemovesWithoutAsking(t *testing.T) {
	path := writeTwoRecorded(t)
	_, errOut, err := runAlp(t, "", "state", "rm", "-auto-approve", "add-node-08", "upgrade-app1", "--state", path)
	if err != nil {
		t.Fatalf("state rm -auto-approve: %v\n%s", err, errOut)
	}
	if strings.Contains(errOut, "Type remove") {
		t.Errorf("-auto-approve asked:\n%s", errOut)
	}
	if out, _, _ := runAlp(t, "", "state", "list", "--state", path); out != "" {
		t.Errorf("after rm of both, state list printed %q", out)
	}
}

// unchanged fails unless the state file at path is twoRecorded and no
// backup was written.
func unchanged(t *testing.T, path string) {
	t.Helper()
	if b, _ := os.ReadFile(path); string(b) != twoRecorded {
		t.Errorf("state.json changed:\n%s", b)
	}
	if _, err := os.Stat(path + ".backup"); err == nil {
		t.Error("a backup was written although nothing was removed")
	}
}
