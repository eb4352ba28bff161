package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/preflight"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

// The versions of testdata/apply, and what the test below makes of them:
// "unelected" gains a replica_version record but stays off the
// blessed_replica_versions list; "previous" keeps its place on the list but
// loses its record.
const (
	versionCurrent   = "f7a20dd476ef99474b4f932fb0a24327bdeb4a67"
	versionPrevious  = "b14a223a8fa8498a3f75f86d0622d37e24a0a780"
	versionUnelected = "790bb016bef1fc5ebc226e040ef574b29ae87dea"
)

// electedByRecordsOnly writes a registry where the blessed list and the
// replica_version records disagree about two versions.
func electedByRecordsOnly(t *testing.T, reg *registry.Registry) {
	t.Helper()
	rec := nns.ReplicaVersionRecordPB{ReleasePackageSha256Hex: strings.Repeat("ab", 32), ReleasePackageURLs: []string{"https://download.invalid/guestos.tar.zst"}}
	blessed := nns.BlessedReplicaVersionsPB{BlessedVersionIDs: []string{versionCurrent, versionPrevious}}
	reg.Apply([]registry.Mutation{
		{Key: nns.ReplicaVersionRecordKey(versionUnelected), Value: rec.Marshal()},
		{Key: nns.ReplicaVersionRecordKey(versionPrevious), Delete: true},
		{Key: nns.BlessedReplicaVersionsKey, Value: blessed.Marshal()},
	})
}

// applyCopy copies testdata/apply to a folder, with node_01 declared on the
// unelected version and node_05 on the previous one, and node_12 (a
// blackhole, so its status read would wait for the timeout) unchecked.
func applyCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "resources"), 0o755); err != nil {
		t.Fatal(err)
	}
	pin := map[string]string{
		"kj5am-xco6a-pfwgh-2xiym-32xzp-d2e5e-m5jtt-tetho-2faxm-zmq7z-iae": "guestos_version.unelected.id",
		"sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe": "guestos_version.previous.id",
		"duzrk-fjvvw-jhb3e-73vej-iyczl-zwimv-xrnlr-lvg45-ocnlu-yfm6l-nqe": `"none"`,
	}
	for _, f := range []string{"proposals.hcl", "resources.hcl", "resources/extra.hcl"} {
		raw, err := os.ReadFile(filepath.Join("testdata/apply", f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for id, v := range pin {
			line := `  id       = "` + id + `"` + "\n"
			if f == "resources.hcl" {
				if !strings.Contains(text, line) {
					t.Fatalf("examples/fleet/resources.hcl changed: node %s not found", id)
				}
				text = strings.Replace(text, line, line+"  guestos_version = "+v+"\n", 1)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "proposals.hcl")
}

// TestElectedMeansTheSameToReconcileGuestosSyncPlanAndTheDryRun: a version
// is elected when its replica_version_<id> record exists, whatever the
// blessed_replica_versions list says, and all four readers agree on it.
func TestElectedMeansTheSameToReconcileGuestosSyncPlanAndTheDryRun(t *testing.T) {
	d := startApplyDevnet(t)
	electedByRecordsOnly(t, d.Registry)
	config := applyCopy(t)
	statePath := noState(t)

	// guestos sync
	out, errOut, err := runAlp(t, "", "guestos", "sync", "--config", config, "--output", "json")
	if err != nil {
		t.Fatalf("guestos sync: %v\n%s%s", err, out, errOut)
	}
	var sync guestosSync
	if err := json.Unmarshal([]byte(out), &sync); err != nil {
		t.Fatal(err)
	}
	// every version is declared in resources.hcl or extra.hcl, so sync
	// lists an elected one as "elsewhere" and leaves an unelected one out
	synced := map[string]string{}
	for _, b := range sync.Blocks {
		synced[b.ID] = b.Status
	}
	for id, want := range map[string]bool{versionCurrent: true, versionUnelected: true, versionPrevious: false} {
		if got := synced[id] == "elsewhere"; got != want {
			t.Errorf("guestos sync: %s is %q, want elected %v", id, synced[id], want)
		}
	}

	// reconcile: node_01 is declared on the unelected version (it runs
	// current), node_05 on the previous one, node_02 on the default
	out, _, _ = runAlp(t, "", "reconcile", "--config", config, "--state", statePath, "--all")
	_, versions, _ := strings.Cut(out, "\nGuestOS versions\n")
	for node, elected := range map[string]bool{"node_01": true, "node_05": false, "node_02": true} {
		var row string
		for _, l := range strings.Split(versions, "\n") {
			if strings.Contains(l, "  "+node+"  ") {
				row = l
			}
		}
		if row == "" || strings.Contains(row, "NOT ELECTED") == elected {
			t.Errorf("reconcile: %s row %q, want elected %v\n%s", node, row, elected, out)
		}
	}

	// plan and the dry run (apply without --yes)
	for name, want := range map[string]bool{"deploy-unelected": true, "downgrade-app1": false} {
		out, _, _ := runAlp(t, "", "plan", name, "--config", config, "--state", statePath, "--output", "json")
		var plan planJSON
		if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Proposals) != 1 {
			t.Fatalf("plan %s: %v\n%s", name, err, out)
		}
		if ready := plan.Proposals[0].Verdict == preflight.VerdictReady; ready != want {
			t.Errorf("plan %s: %s, want elected %v", name, plan.Proposals[0].Verdict, want)
		}
		_, errOut, err := runAlp(t, "", "apply", name, "--config", config, "--state", statePath)
		if !strings.Contains(errOut, "dry run: ") {
			t.Fatalf("apply %s did not dry-run (%v)\n%s", name, err, errOut)
		}
		if dryRunPassed := !strings.Contains(errOut, "dry run: FAILED"); dryRunPassed != want {
			t.Errorf("dry run of %s: passed %v, want %v (%v)\n%s", name, dryRunPassed, want, err, errOut)
		}
	}
}
