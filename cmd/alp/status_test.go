package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

// statusNetwork is a local NNS whose governance holds proposals 1-4
// (executed, failed, open, rejected) at fixed times, and a dashboard that
// still has proposal 5, which governance purged. Proposal 6 is nowhere.
func statusNetwork(t *testing.T) (host, dashboard string) {
	t.Helper()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	secs := uint64(at.Unix())
	gov := governance.New(governance.Config{Now: func() time.Time { return at }}, nil)
	title := "a proposal"
	seed := func(status nns.ProposalStatus, yes, no uint64, fail string) {
		info := nns.ProposalInfo{Status: int32(status), Topic: int32(nns.TopicSubnetManagement),
			ProposalTimestampSeconds: secs - 3600, LatestTally: &nns.Tally{Yes: yes, No: no, Total: 1000, TimestampSeconds: secs},
			Proposer: &nns.NeuronID{ID: 4242}, Proposal: &nns.Proposal{Title: &title}}
		switch status {
		case nns.StatusExecuted:
			info.DecidedTimestampSeconds, info.ExecutedTimestampSeconds = secs-60, secs
		case nns.StatusFailed:
			info.DecidedTimestampSeconds, info.FailedTimestampSeconds = secs-60, secs
			info.FailureReason = &nns.GovernanceError{ErrorType: nns.ErrorTypeExternal, ErrorMessage: fail}
		case nns.StatusRejected:
			info.DecidedTimestampSeconds = secs - 60
		}
		gov.SeedProposal(info)
	}
	seed(nns.StatusExecuted, 900, 10, "")
	seed(nns.StatusFailed, 700, 0, "node x is not a member of subnet y")
	seed(nns.StatusOpen, 20, 5, "")
	seed(nns.StatusRejected, 10, 600, "")

	srv, err := localnet.New(localnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.InstallNNS(registry.New(), gov)
	ic := httptest.NewServer(srv)
	t.Cleanup(ic.Close)
	dash := httptest.NewServer(&devnet.Dashboard{Proposals: func() []devnet.DashboardProposal {
		return []devnet.DashboardProposal{{ID: 5, ProposalID: 5, Status: "EXECUTED", Proposer: "4242", ProposalTimestampSeconds: secs - 90000,
			DecidedTimestampSeconds: secs - 86400, ExecutedTimestampSeconds: secs - 86400}}
	}})
	t.Cleanup(dash.Close)
	return ic.URL, dash.URL
}

// statusState records six proposals: two already terminal in state.json,
// the rest without a status yet.
func statusState(t *testing.T) string {
	t.Helper()
	at := time.Date(2026, 11, 19, 9, 0, 0, 0, time.UTC)
	st := state.New()
	add := func(name string, id uint64, status state.Status) {
		st.Proposals[name] = &state.Proposal{Kind: "membership", ProposalID: id, PayloadSHA256: strings.Repeat("0", 64), Neuron: 4242, SubmittedAt: state.TimeOf(at), Status: status}
	}
	add("add-node-08", 1, state.StatusOpen)
	add("halt-app1", 2, "")
	add("downgrade-app1", 3, "")
	add("drop-node-12", 4, "")
	add("drop-gone-provider", 5, state.StatusOpen)
	add("drop-empty-operator", 6, "")
	path := filepath.Join(t.TempDir(), "state.json")
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStatusPrintsEachProposalWithItsTallyFallsBackToTheDashboardAndRecordsChanges(t *testing.T) {
	host, dash := statusNetwork(t)
	statePath := statusState(t)
	out, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath, "--host", host, "--dashboard-url", dash)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	golden(t, "status.golden", []byte(out))

	st := loadStateFile(t, statePath)
	want := map[string]state.Status{"add-node-08": "executed", "halt-app1": "failed", "downgrade-app1": "open", "drop-node-12": "rejected", "drop-gone-provider": "executed", "drop-empty-operator": ""}
	for name, s := range want {
		if got := st.Proposals[name].Status; got != s {
			t.Errorf("%s recorded as %q, want %q", name, got, s)
		}
	}
	executed := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	if r := st.Proposals["add-node-08"].ResolvedAt; r != state.TimeOf(executed) {
		t.Errorf("resolved_at = %v, want the executed time %v", r, executed)
	}
	if r := st.Proposals["drop-gone-provider"].ResolvedAt; r != state.TimeOf(executed.Add(-24*time.Hour)) {
		t.Errorf("resolved_at from the dashboard = %v", r)
	}

	// a second run finds nothing new to record
	out, _, err = runAlp(t, "", "status", "--config", applyConfig, "--state", statePath, "--host", host, "--dashboard-url", dash)
	if err != nil || strings.Contains(out, "recorded ") {
		t.Fatalf("second status: %v\n%s", err, out)
	}
}

func TestStatusJSON(t *testing.T) {
	host, dash := statusNetwork(t)
	out, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statusState(t), "--host", host, "--dashboard-url", dash, "--output", "json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	golden(t, "status.json.golden", []byte(out))
}

func TestATerminalStatusInStateIsNeverOverwritten(t *testing.T) {
	host, dash := statusNetwork(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	st := state.New()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// recorded as rejected, governance says open: state.json keeps rejected
	st.Proposals["x"] = &state.Proposal{Kind: "membership", ProposalID: 3, Status: state.StatusRejected, ResolvedAt: state.TimeOf(at)}
	if err := st.Save(statePath); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath, "--host", host, "--dashboard-url", dash); err != nil {
		t.Fatal(err)
	}
	if rec := loadStateFile(t, statePath).Proposals["x"]; rec.Status != state.StatusRejected || rec.ResolvedAt != state.TimeOf(at) {
		t.Fatalf("recorded %+v", rec)
	}
}

// Off the network, status fails with one line that names the host, where
// it came from and how to choose another, not a dial error per proposal.
func TestStatusAgainstAnUnreachableHostFailsInOneLineNamingItAndTheFlags(t *testing.T) {
	out, errOut, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statusState(t), "--host", "http://127.0.0.1:1")
	if exitCode(err) != 1 || out != "" || errOut != "" {
		t.Fatalf("err %v\n%s%s", err, out, errOut)
	}
	msg := err.Error()
	for _, want := range []string{"cannot reach http://127.0.0.1:1 (from --host): connection refused", "--host, $ALP_HOST or provider.host"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Count(msg, "127.0.0.1:1") != 1 {
		t.Errorf("want one line naming the host once: %q", msg)
	}
}

func TestImportOfAProposalGovernancePurgedReadsTheDashboard(t *testing.T) {
	host, dash := statusNetwork(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	out, errOut, err := runAlp(t, "", "import", "drop-gone-provider", "5", "--config", applyConfig, "--state", statePath, "--host", host, "--dashboard-url", dash)
	if err != nil || !strings.Contains(out, "[via ICP dashboard; purged from governance]") || !strings.Contains(errOut, "neither the kind nor the payload was compared") {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	executed := time.Date(2026, 11, 19, 9, 0, 0, 0, time.UTC)
	rec := loadStateFile(t, statePath).Proposals["drop-gone-provider"]
	if rec.Neuron != 4242 || rec.Status != state.StatusExecuted || rec.SubmittedAt != state.TimeOf(executed.Add(-time.Hour)) || rec.ResolvedAt != state.TimeOf(executed) || rec.Kind != "remove_node_provider" {
		t.Fatalf("recorded %+v", rec)
	}
	if _, _, err := runAlp(t, "", "import", "halt-app1", "6", "--config", applyConfig, "--state", statePath, "--host", host, "--dashboard-url", dash); err == nil || !strings.Contains(err.Error(), "neither governance") {
		t.Fatalf("import of an unknown proposal: %v", err)
	}
}
