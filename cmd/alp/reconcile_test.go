package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
)

const exampleConfig = "../../examples/fleet/proposals.hcl"

// startExampleDevnet runs the devnet on its default fleet, the one
// examples/fleet declares (with node_05 drifted).
func startExampleDevnet(t *testing.T) *devnet.Devnet {
	t.Helper()
	fleet, err := devnet.ParseFleet(devnet.DefaultFleet) // examples/fleet/fleet.json
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	// Parallel reads can leave a dialled connection unused, which the
	// devnet's shutdown waits 5 seconds for; close those first.
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	return d
}

func reconcileArgs(d *devnet.Devnet, config, statePath string, more ...string) []string {
	args := devnetArgs(d, append([]string{"reconcile", "--config", config, "--state", statePath}, more...)...)
	return append(args, "--kds-url", d.KDSURL, "--node-status-ca", d.NodeCAPath)
}

func TestReconcileOfTheExampleFleetReportsTheDriftedNodeAndExitsTwo(t *testing.T) {
	d := startExampleDevnet(t)
	statePath := noState(t)
	out, errOut, err := runSplit(reconcileArgs(d, exampleConfig, statePath, "--all")...)
	if exitCode(err) != 2 {
		t.Fatalf("exit %d (%v), want 2: node_05 runs the previous release\n%s%s", exitCode(err), err, out, errOut)
	}
	golden(t, "reconcile/reconcile.golden", []byte(out))
	// By default: counts, the drifted row, the summary.
	brief, _, err := runSplit(reconcileArgs(d, exampleConfig, statePath)...)
	if exitCode(err) != 2 {
		t.Fatalf("default: exit %d (%v)", exitCode(err), err)
	}
	golden(t, "reconcile/reconcile.brief.golden", []byte(brief))
	if strings.Contains(brief, "node_12") || !strings.Contains(brief, "node_05") || !strings.Contains(brief, "every row with --all") {
		t.Errorf("the default report shows rows in sync or hides the drift:\n%s", brief)
	}
	for _, want := range []string{
		"version-mismatch   node_05  sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe  declared=current live=previous",
		"ok                 node_12  duzrk-fjvvw-jhb3e-73vej-iyczl-zwimv-xrnlr-lvg45-ocnlu-yfm6l-nqe  current via dashboard (status DOWN)",
		"reconcile: 1 drift, 0 unknown (not drift)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// The three on-chain chips AMD vouches for are cached; the second run
	// reads them from state.json.
	st, err := state.Load(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Chips) != 3 {
		t.Fatalf("cached chips %+v, want the 3 of node_01..03", st.Chips)
	}
	out, _, err = runSplit(reconcileArgs(d, exampleConfig, statePath, "--output", "json")...)
	if exitCode(err) != 2 {
		t.Fatalf("json: exit %d (%v)", exitCode(err), err)
	}
	golden(t, "reconcile/reconcile.json.golden", []byte(out))
	if strings.Count(out, "(cached)") != 3 {
		t.Fatalf("the second run asked KDS again:\n%s", out)
	}

	// --refresh-chips asks again, and AMD still vouches for all three.
	out, _, err = runSplit(reconcileArgs(d, exampleConfig, statePath, "--refresh-chips", "--all")...)
	if exitCode(err) != 2 || strings.Contains(out, "(cached)") || strings.Count(out, "AMD KDS: ") != 3 {
		t.Fatalf("refresh: exit %d (%v)\n%s", exitCode(err), err, out)
	}
	if st, err := state.Load(statePath); err != nil || len(st.Chips) != 3 {
		t.Fatalf("after refresh: %v %+v", err, st)
	}
}

// inSyncExample writes examples/fleet with node_05 declared on the version
// it really runs, so the example devnet agrees with it everywhere.
func inSyncExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"proposals.hcl", "resources.hcl"} {
		raw, err := os.ReadFile(filepath.Join("../../examples/fleet", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "resources.hcl" {
			// Declare what node_05 really runs: its own version, over the default.
			node05 := `  id       = "sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe"` + "\n"
			if !strings.Contains(string(raw), node05) {
				t.Fatal("examples/fleet/resources.hcl changed: node_05 not found")
			}
			raw = []byte(strings.Replace(string(raw), node05, node05+"  guestos_version = guestos_version.previous.id\n", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "proposals.hcl")
}

func TestReconcileExitsZeroWhenTheFleetIsInSync(t *testing.T) {
	d := startExampleDevnet(t)
	out, errOut, err := runSplit(reconcileArgs(d, inSyncExample(t), noState(t), "--all")...)
	if err != nil {
		t.Fatalf("exit %d (%v), want 0\n%s%s", exitCode(err), err, out, errOut)
	}
	if !strings.Contains(out, "node_05  sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe  previous [override]") ||
		!strings.Contains(out, "reconcile: in sync, 0 unknown") {
		t.Fatalf("report:\n%s", out)
	}
}

func TestAnUnreachableThirdPartyIsCountedAndFailsTheGateOnlyUnderStrict(t *testing.T) {
	d := startExampleDevnet(t)
	config := inSyncExample(t)
	// node_12 does not answer its status endpoint; with the dashboard down
	// too nobody can say what it runs.
	dead := "http://127.0.0.1:1"
	args := append(reconcileArgs(d, config, noState(t)), "--dashboard-url", dead) // the last one given wins
	out, errOut, err := runSplit(args...)
	if err != nil {
		t.Fatalf("exit %d (%v), want 0: an unknown is not drift\n%s%s", exitCode(err), err, out, errOut)
	}
	if want := "reconcile: in sync, 1 unknown (not drift; 1 node status or dashboard)"; !strings.Contains(out, want) {
		t.Fatalf("summary lacks %q:\n%s", want, out)
	}
	out, _, err = runSplit(append(args, "--strict")...)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "--strict") {
		t.Fatalf("--strict: exit %d (%v)\n%s", exitCode(err), err, out)
	}
}

func TestReconcileRefusesAnUnknownOutputFormat(t *testing.T) {
	_, _, err := runSplit("reconcile", "--config", exampleConfig, "--output", "yaml")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "yaml") {
		t.Fatalf("err %v", err)
	}
}

func TestAFailedGovernanceReadMeansTheGateDidNotRunAndExitsOneNamingIt(t *testing.T) {
	d := startExampleDevnet(t)
	// The IC endpoint as a proxy that fails every governance query, of any
	// version (list_node_providers is reconcile's only one), and passes the
	// rest.
	target, err := url.Parse(d.ICURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/canister/"+nns.GovernanceCanisterID+"/query") {
			http.Error(w, "governance is down", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	args := append(reconcileArgs(d, inSyncExample(t), noState(t)), "--host", srv.URL) // the last one given wins
	out, errOut, err := runSplit(args...)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "reconcile did not run: 1 registry or governance read(s) failed: governance: node provider 2axfb") {
		t.Fatalf("exit %d (%v), want 1 naming the governance read\n%s%s", exitCode(err), err, out, errOut)
	}
	if !strings.Contains(out, "reconcile did not run") || strings.Contains(out, "reconcile: in sync") {
		t.Fatalf("report:\n%s", out)
	}
}

func TestReconcileRunsOnResourcesAloneWhenNoProposalsFileExists(t *testing.T) {
	d := startExampleDevnet(t)
	dir := t.TempDir()
	resources, err := os.ReadFile(filepath.Join(filepath.Dir(exampleConfig), "resources.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), resources, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runSplit(reconcileArgs(d, filepath.Join(dir, "proposals.hcl"), noState(t))...)
	if exitCode(err) != 2 || !strings.Contains(out, "reconcile: 1 drift") {
		t.Fatalf("exit %d (%v), want 2 for node_05's drift, as with proposals.hcl beside it\n%s%s", exitCode(err), err, out, errOut)
	}
	if !strings.Contains(errOut, "reading "+filepath.Join(dir, "resources.hcl")+" alone") {
		t.Errorf("stderr does not say the resources were read alone:\n%s", errOut)
	}
	// Resources kept only in resources/*.hcl are read alone too.
	split := t.TempDir()
	if err := os.Mkdir(filepath.Join(split, "resources"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(split, "resources", "fleet.hcl"), resources, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = runSplit(reconcileArgs(d, filepath.Join(split, "proposals.hcl"), noState(t))...)
	if exitCode(err) != 2 || !strings.Contains(out, "reconcile: 1 drift") {
		t.Fatalf("resources/fleet.hcl alone: exit %d (%v), want 2 for node_05's drift\n%s%s", exitCode(err), err, out, errOut)
	}
	if !strings.Contains(errOut, "reading "+filepath.Join(split, "resources", "*.hcl")+" alone") {
		t.Errorf("stderr does not say resources/*.hcl was read alone:\n%s", errOut)
	}
	// Without resources.hcl either, the missing file is still an error.
	empty := t.TempDir()
	if _, err := execute(t, "reconcile", "--config", filepath.Join(empty, "proposals.hcl")); exitCode(err) != 1 || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("no config at all: %v", err)
	}
}
