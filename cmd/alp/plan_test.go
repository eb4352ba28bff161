package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/planfile"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
)

const planFixture = "testdata/plan/proposals.hcl"

// startPlanDevnet runs the devnet on testdata/plan/fleet.json for the test.
func startPlanDevnet(t *testing.T) *devnet.Devnet {
	t.Helper()
	raw, err := os.ReadFile("testdata/plan/fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := devnet.ParseFleet(raw)
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
	return d
}

// runSplit runs alp with stdout and stderr apart (progress lines carry the
// devnet's random ports, results must not).
func runSplit(args ...string) (stdout, stderr string, err error) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func devnetArgs(d *devnet.Devnet, args ...string) []string {
	return append(args, "--host", d.ICURL, "--explorer-url", d.ExplorerURL, "--dashboard-url", d.DashboardURL)
}

func noState(t *testing.T) string { return filepath.Join(t.TempDir(), "state.json") }

func TestPlanReportsEveryKindAgainstTheDevnetAndExitsTwo(t *testing.T) {
	d := startPlanDevnet(t)
	out, errOut, err := runSplit(devnetArgs(d, "plan", "--config", planFixture, "--state", noState(t))...)
	if exitCode(err) != 2 {
		t.Fatalf("exit %d (%v), want 2: something is flagged\n%s%s", exitCode(err), err, out, errOut)
	}
	golden(t, "plan/plan.golden", []byte(out))

	out, _, err = runSplit(devnetArgs(d, "plan", "--config", planFixture, "--state", noState(t), "--output", "json")...)
	if exitCode(err) != 2 {
		t.Fatalf("json: exit %d (%v)", exitCode(err), err)
	}
	golden(t, "plan/plan.json.golden", []byte(out))
}

func TestPlanOfReadyProposalsExitsZero(t *testing.T) {
	d := startPlanDevnet(t)
	out, errOut, err := runSplit(devnetArgs(d, "plan", "grow-app1", "drop-op-c", "--config", planFixture, "--state", noState(t))...)
	if err != nil {
		t.Fatalf("plan: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "grow-app1 (membership): ready") || !strings.Contains(out, "drop-op-c (remove_node_operators): ready") || strings.Contains(out, "tune-app1") {
		t.Fatalf("named proposals only, both ready:\n%s", out)
	}
}

func TestPlanOfANoOpAloneExitsTwo(t *testing.T) {
	d := startPlanDevnet(t)
	out, errOut, err := runSplit(devnetArgs(d, "plan", "re-add-n1", "--config", planFixture, "--state", noState(t))...)
	if exitCode(err) != 2 || !strings.Contains(out, "re-add-n1 (membership): no-op") || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("exit %d (%v), want 2: a no-op is not something to submit\n%s%s", exitCode(err), err, out, errOut)
	}
}

func TestPlanSkipsProposalsStateAlreadyRecords(t *testing.T) {
	d := startPlanDevnet(t)
	cfg, err := config.Load(planFixture)
	if err != nil {
		t.Fatal(err)
	}
	st := state.New()
	for _, p := range cfg.Proposals {
		if p.Name == "drop-q" {
			continue
		}
		b, err := proposal.Build(p)
		if err != nil {
			t.Fatal(err)
		}
		st.Proposals[p.Name] = &state.Proposal{Kind: string(p.Kind), ProposalID: 7, PayloadSHA256: b.PayloadSHA256, SubmittedAt: state.TimeOf(time.Now())}
	}
	path := noState(t)
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	out, _, err := runSplit(devnetArgs(d, "plan", "--config", planFixture, "--state", path, "--output", "json")...)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	var got planJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Proposals) != 1 || got.Proposals[0].Name != "drop-q" {
		t.Fatalf("want only drop-q planned, got %v:\n%s", err, out)
	}
	delete(st.Proposals, "drop-q")
	st.Proposals["drop-q"] = &state.Proposal{Kind: "remove_node_provider", ProposalID: 8, PayloadSHA256: strings.Repeat("0", 64), SubmittedAt: state.TimeOf(time.Now())}
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	out, _, err = runSplit(devnetArgs(d, "plan", "--config", planFixture, "--state", path)...)
	if err != nil || !strings.Contains(out, "nothing to plan") {
		t.Fatalf("all recorded: %v\n%s", err, out)
	}
}

func TestPlanRefusesAnUndeclaredName(t *testing.T) {
	_, _, err := runSplit("plan", "nope", "--config", planFixture, "--state", noState(t), "--host", "http://127.0.0.1:1")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "no proposal named nope") {
		t.Fatalf("err = %v", err)
	}
}

func TestAPlanFilePinsThePayloadAndTheRegistryVersionUntilTheRegistryMoves(t *testing.T) {
	d := startPlanDevnet(t)
	file := filepath.Join(t.TempDir(), "plan.json")
	// Terraform's spelling, -out FILE, must work despite -o being --output.
	_, errOut, err := runSplit(devnetArgs(d, "plan", "grow-app1", "-out", file, "--config", planFixture, "--state", noState(t))...)
	if err != nil {
		t.Fatalf("plan -out: %v\n%s", err, errOut)
	}
	plan, err := planfile.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := plan.Lookup("grow-app1")
	if !ok || e.RegistryVersion != d.Registry.Version() || e.Verdict != "ready" || plan.Host != d.ICURL {
		t.Fatalf("entry %+v (registry at %d), host %s", e, d.Registry.Version(), plan.Host)
	}
	b := declaredIn(t, planFixture, "grow-app1")
	if err := e.Check(b.PayloadSHA256, d.Registry.Version()); err != nil {
		t.Fatalf("fresh plan refused: %v", err)
	}
	d.Registry.ElectVersion("4444444444444444444444444444444444444444", nns.ReplicaVersionRecordPB{})
	if err := e.Check(b.PayloadSHA256, d.Registry.Version()); !errors.Is(err, planfile.ErrRegistryMoved) {
		t.Fatalf("after a registry change: %v", err)
	}
}

func TestPlanForceTurnsAnUnelectedVersionIntoAWarning(t *testing.T) {
	d := startPlanDevnet(t)
	out, errOut, err := runSplit(devnetArgs(d, "plan", "unelected-app1", "--force", "--config", planFixture, "--state", noState(t))...)
	if err != nil {
		t.Fatalf("plan --force: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "unelected-app1 (deploy_guestos): ready") || !strings.Contains(out, "warning  version never") {
		t.Fatalf("want ready with a warning:\n%s", out)
	}
}

func TestPlanOfAConfigDeclaringNoProposalSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "proposals.hcl"), []byte("provider {\n  neuron = 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "plan", "--config", filepath.Join(dir, "proposals.hcl"), "--state", noState(t))
	if err != nil || !strings.Contains(out, "declares no proposal") {
		t.Fatalf("plan: %v\n%s", err, out)
	}
}
