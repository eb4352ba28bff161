package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/planfile"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// applyConfig declares one proposal of every kind against
// testdata/apply/fleet.json, plus a sev_enabled change and a no-op.
const applyConfig = "testdata/apply/proposals.hcl"

// startApplyDevnet starts the devnet of testdata/apply/fleet.json and
// points alp at it through the environment, as `alp devnet` tells a person
// to.
func startApplyDevnet(t *testing.T) *devnet.Devnet {
	t.Helper()
	return startApplyDevnetWith(t, 0)
}

// startApplyDevnetWith keeps proposals open for votingPeriod.
func startApplyDevnetWith(t *testing.T, votingPeriod time.Duration) *devnet.Devnet {
	t.Helper()
	return startApplyDevnetEdited(t, votingPeriod, func(*devnet.Fleet) {})
}

// startApplyDevnetEdited starts testdata/apply/fleet.json once edit has
// changed it.
func startApplyDevnetEdited(t *testing.T, votingPeriod time.Duration, edit func(*devnet.Fleet)) *devnet.Devnet {
	t.Helper()
	return startApplyDevnetOptions(t, devnet.Options{VotingPeriod: votingPeriod}, edit)
}

// startApplyDevnetOptions starts it with opts (Fleet and Dir filled in),
// once edit has changed the fleet.
func startApplyDevnetOptions(t *testing.T, opts devnet.Options, edit func(*devnet.Fleet)) *devnet.Devnet {
	t.Helper()
	return startDevnetFile(t, "testdata/apply/fleet.json", opts, edit)
}

// startDevnetFile starts the devnet of the fleet file at path once edit
// has changed it, and points alp at it through the environment.
func startDevnetFile(t *testing.T, path string, opts devnet.Options, edit func(*devnet.Fleet)) *devnet.Devnet {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := devnet.ParseFleet(data)
	if err != nil {
		t.Fatal(err)
	}
	edit(fleet)
	opts.Fleet, opts.Dir = fleet, t.TempDir()
	d, err := devnet.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, e := range d.Env() {
		t.Setenv(e.Name, e.Value)
	}
	return d
}

// runAlp runs alp with stdin and returns stdout and stderr apart.
func runAlp(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func loadStateFile(t *testing.T, path string) *state.State {
	t.Helper()
	st, err := state.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func declaredHash(t *testing.T, name string) string {
	t.Helper()
	return declared(t, name).PayloadSHA256
}

// declared builds proposal name of applyConfig.
func declared(t *testing.T, name string) *proposal.Proposal {
	t.Helper()
	return declaredIn(t, applyConfig, name)
}

// declaredIn builds proposal name of the configuration at path.
func declaredIn(t *testing.T, path, name string) *proposal.Proposal {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proposal.Build(cfg.Proposal(name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var everyKind = []string{"add-node-08", "downgrade-app1", "halt-app1", "drop-node-12", "drop-empty-operator", "drop-gone-provider",
	"add-new-operator", "raise-ge1-allowance", "hostos-node-08"}

func TestEveryKindIsAppliedEndToEndAndStatusReadsItBackAsExecuted(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	for _, name := range everyKind {
		out, errOut, err := runAlp(t, "", "apply", name, "--config", applyConfig, "--state", statePath)
		if err != nil || !strings.Contains(out, "dry run only; run again with --yes to submit") {
			t.Fatalf("apply %s without --yes: %v\n%s%s", name, err, out, errOut)
		}
		if _, err := os.Stat(statePath); err == nil && loadStateFile(t, statePath).Proposals[name] != nil {
			t.Fatalf("apply %s without --yes recorded something", name)
		}
		out, errOut, err = runAlp(t, "submit\n", "apply", name, "--config", applyConfig, "--state", statePath, "--yes")
		if err != nil {
			t.Fatalf("apply %s --yes: %v\n%s%s", name, err, out, errOut)
		}
		for _, s := range []string{"dry run: executed", "neuron access: " + d.Identity.String() + " is the controller of neuron 4242", "preflight: " + name, "Type submit"} {
			if !strings.Contains(errOut, s) {
				t.Errorf("apply %s: progress lacks %q:\n%s", name, s, errOut)
			}
		}
		rec := loadStateFile(t, statePath).Proposals[name]
		if rec == nil || rec.ProposalID == 0 || rec.PayloadSHA256 != declaredHash(t, name) || rec.SubmittedBy != d.Identity.String() || rec.Neuron != 4242 || rec.Host != d.ICURL {
			t.Fatalf("apply %s recorded %+v", name, rec)
		}
		if !strings.Contains(out, "as proposal "+strconv.FormatUint(rec.ProposalID, 10)) {
			t.Errorf("apply %s printed:\n%s", name, out)
		}
	}

	out, errOut, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath)
	if err != nil {
		t.Fatalf("status: %v\n%s%s", err, out, errOut)
	}
	if want := fmt.Sprintf("%d proposal(s): %d executed", len(everyKind), len(everyKind)); !strings.Contains(out, want) {
		t.Fatalf("status:\n%s", out)
	}
	st := loadStateFile(t, statePath)
	for _, name := range everyKind {
		if rec := st.Proposals[name]; rec.Status != state.StatusExecuted || rec.ResolvedAt == "" {
			t.Errorf("%s recorded as %q (resolved %v) after status", name, rec.Status, rec.ResolvedAt)
		}
	}

	// list, offline, shows each of them in sync and executed
	out, _, err = runAlp(t, "", "list", "--config", applyConfig, "--state", statePath, "--output", "json")
	var rows []listRow
	if jerr := json.Unmarshal([]byte(out), &rows); jerr != nil {
		t.Fatalf("list: %v %v\n%s", err, jerr, out)
	}
	listed := map[string]listRow{}
	for _, r := range rows {
		listed[r.Name] = r
	}
	for _, name := range everyKind {
		if r := listed[name]; r.Sync != proposal.InSync || r.State == nil || r.State.Status != state.StatusExecuted {
			t.Errorf("list shows %s as %+v", name, r)
		}
	}

	// and the devnet's registry and governance really changed
	app1 := principal.MustDecode("x6rmp-4m3v3-io5bv-ve6hr-5pvmp-iacd3-zxsfc-l7hee-luzm7-6ltzy-xqe")
	sub, _, _ := d.Registry.Subnet(app1)
	if !sub.IsHalted || sub.ReplicaVersionID != "b14a223a8fa8498a3f75f86d0622d37e24a0a780" || len(sub.Membership) != 8 {
		t.Errorf("app1 = halted %t, version %s, %d members", sub.IsHalted, sub.ReplicaVersionID, len(sub.Membership))
	}
	if _, ok, _ := d.Registry.Node(principal.MustDecode("duzrk-fjvvw-jhb3e-73vej-iyczl-zwimv-xrnlr-lvg45-ocnlu-yfm6l-nqe")); ok {
		t.Error("node_12 is still registered")
	}
	if _, ok, _ := d.Registry.NodeOperator(principal.MustDecode("sp5zt-ai3iy-6276d-6qiqv-r4t3q-i3mxk-jlaaa-frtfo-6zfs7-wd3i5-4qe")); ok {
		t.Error("the empty operator is still registered")
	}
	for _, np := range d.Governance.ListNodeProviders().NodeProviders {
		if np.ID.String() == "xlbud-wqevv-daemz-63mb5-5qags-cqnxo-keqio-iubrg-4yxaj-g6p6f-uae" {
			t.Error("governance still knows the gone provider")
		}
	}
}

func TestStatusReadsBackAFailedProposal(t *testing.T) {
	startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	// --force takes the sev change past the dry run; governance adopts it
	// and the registry refuses it on execution
	if out, errOut, err := runAlp(t, "submit\n", "apply", "sev-on-app1", "--config", applyConfig, "--state", statePath, "--yes", "--force"); err != nil {
		t.Fatalf("apply --force: %v\n%s%s", err, out, errOut)
	}
	out, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(out, "1 proposal(s): 1 failed") || !strings.Contains(out, "sev_enabled") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if rec := loadStateFile(t, statePath).Proposals["sev-on-app1"]; rec.Status != state.StatusFailed {
		t.Fatalf("recorded %+v", rec)
	}
}

func proposalsIn(d *devnet.Devnet) int { return len(d.Governance.Proposals()) }

func TestTheConfirmationMustBeTheWordSubmit(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	before := proposalsIn(d)
	for _, tc := range []struct{ stdin, says string }{
		{"yes\n", `you typed "yes", not submit`},
		{"", "stdin is closed or not a terminal"},
		{"Submit\n", `you typed "Submit"`},
	} {
		_, errOut, err := runAlp(t, tc.stdin, "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes")
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "nothing was submitted") {
			t.Errorf("stdin %q: err %v\n%s", tc.stdin, err, errOut)
		}
	}
	if proposalsIn(d) != before {
		t.Fatal("a proposal was made without the typed confirmation")
	}
	if _, err := os.Stat(statePath); err == nil {
		t.Fatal("state.json was written")
	}
}

func TestTheDryRunStopsWhatTheRegistryWouldRefuseWithExitTwo(t *testing.T) {
	d := startApplyDevnet(t)
	for name, reason := range map[string]string{
		"sev-on-app1":      "Proposal attempts to change sev_enabled for Subnet 'x6rmp-4m3v3-io5bv-ve6hr-5pvmp-iacd3-zxsfc-l7hee-luzm7-6ltzy-xqe' from false to true",
		"drop-member":      "Cannot remove a node that is a member of a subnet. This node is a member of Subnet: subnet_record_x6rmp",
		"deploy-unelected": `Replica version '790bb016bef1fc5ebc226e040ef574b29ae87dea' is NOT elected`,
	} {
		before := proposalsIn(d)
		_, errOut, err := runAlp(t, "submit\n", "apply", name, "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "s.json"), "--yes")
		if exitCode(err) != 2 || !strings.Contains(err.Error(), reason) || !strings.Contains(errOut, "dry run: FAILED") {
			t.Errorf("%s: exit %d, err %v\n%s", name, exitCode(err), err, errOut)
		}
		if proposalsIn(d) != before {
			t.Errorf("%s was submitted", name)
		}
	}
}

func TestANoOpIsRefusedWithoutForce(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	before := proposalsIn(d)
	_, errOut, err := runAlp(t, "submit\n", "apply", "upgrade-app1", "--config", applyConfig, "--state", statePath, "--yes")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "no-op") || proposalsIn(d) != before {
		t.Fatalf("err %v\n%s", err, errOut)
	}
	if _, _, err := runAlp(t, "submit\n", "apply", "upgrade-app1", "--config", applyConfig, "--state", statePath, "--yes", "--force"); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if loadStateFile(t, statePath).Proposals["upgrade-app1"] == nil {
		t.Fatal("the forced no-op was not recorded")
	}
}

func TestARecordedProposalIsNotSubmittedTwice(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	if _, _, err := runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes"); err != nil {
		t.Fatal(err)
	}
	made := proposalsIn(d)

	// the same payload, still open in state.json: nothing to do
	out, _, err := runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes")
	if err != nil || !strings.Contains(out, "nothing to do") {
		t.Fatalf("same payload: %v\n%s", err, out)
	}
	// once status has seen it executed, it is terminal: refused even with --force
	if _, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath); err != nil {
		t.Fatal(err)
	}
	_, _, err = runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes", "--force")
	if err == nil || !strings.Contains(err.Error(), "rename the proposal block") {
		t.Fatalf("terminal record with --force: %v", err)
	}
	if proposalsIn(d) != made {
		t.Fatal("a recorded proposal was submitted again")
	}
}

func TestAChangedPayloadIsRefusedWithoutForce(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	st := state.New()
	st.Proposals["halt-app1"] = &state.Proposal{Kind: "update_subnet", ProposalID: 1, PayloadSHA256: strings.Repeat("ab", 32), Neuron: 4242, Status: state.StatusOpen}
	if err := st.Save(statePath); err != nil {
		t.Fatal(err)
	}
	before := proposalsIn(d)
	_, _, err := runAlp(t, "submit\n", "apply", "halt-app1", "--config", applyConfig, "--state", statePath, "--yes")
	if err == nil || !strings.Contains(err.Error(), "submit again with --force") || proposalsIn(d) != before {
		t.Fatalf("err %v", err)
	}
	if _, _, err := runAlp(t, "submit\n", "apply", "halt-app1", "--config", applyConfig, "--state", statePath, "--yes", "--force"); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if rec := loadStateFile(t, statePath).Proposals["halt-app1"]; rec.PayloadSHA256 != declaredHash(t, "halt-app1") {
		t.Fatalf("recorded %+v", rec)
	}
}

func TestASubmissionThatCannotBeRecordedIsPrintedLoudlyWithExitThreeAndCanBeImported(t *testing.T) {
	d := startApplyDevnet(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(dir, "state.json")
	// the state folder disappears between submit and record (root ignores
	// file modes, so a missing folder is how the write is made to fail)
	applyAfterSubmit = func() { os.RemoveAll(dir) }
	defer func() { applyAfterSubmit = func() {} }()

	_, errOut, err := runAlp(t, "submit\n", "apply", "drop-node-12", "--config", applyConfig, "--state", statePath, "--yes")
	if exitCode(err) != exitLostRecord {
		t.Fatalf("exit code %d (%v), want %d", exitCode(err), err, exitLostRecord)
	}
	all := d.Governance.Proposals()
	id := all[len(all)-1].ID.ID
	for _, s := range []string{
		"PROPOSAL " + strconv.FormatUint(id, 10) + " WAS SUBMITTED",
		"alp import drop-node-12 " + strconv.FormatUint(id, 10),
		`"proposal_id": ` + strconv.FormatUint(id, 10),
	} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}

	// following the advice records it
	applyAfterSubmit = func() {}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runAlp(t, "", "import", "drop-node-12", strconv.FormatUint(id, 10), "--config", applyConfig, "--state", statePath)
	if err != nil {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	rec := loadStateFile(t, statePath).Proposals["drop-node-12"]
	if rec == nil || rec.ProposalID != id || rec.Neuron != 4242 || rec.Status != state.StatusExecuted || rec.PayloadSHA256 != declaredHash(t, "drop-node-12") || withoutNetworkLine(errOut) != "" {
		t.Fatalf("imported %+v, warnings %q", rec, errOut)
	}
}

func TestAnIdentityThatMayNotUseTheNeuronIsRefusedBeforeAnythingIsSent(t *testing.T) {
	d := startApplyDevnet(t)
	other := filepath.Join(t.TempDir(), "other.pem")
	if _, _, err := runAlp(t, "", "keygen", "--out", other); err != nil {
		t.Fatal(err)
	}
	before := proposalsIn(d)
	_, _, err := runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "s.json"), "--yes", "--identity", other)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "neither the neuron's controller nor one of its hotkeys") || proposalsIn(d) != before {
		t.Fatalf("err %v", err)
	}
}

func TestAHotkeyMayProposeWithTheNeuron(t *testing.T) {
	startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	// neuron 1 is controlled by the provider; the devnet identity is its hotkey
	out, errOut, err := runAlp(t, "submit\n", "apply", "add-node-08", "--config", applyConfig, "--state", statePath, "--yes", "--neuron", "1")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "is the hotkey of neuron 1\n") {
		t.Fatalf("apply did not say the identity is a hotkey:\n%s", errOut)
	}
	if rec := loadStateFile(t, statePath).Proposals["add-node-08"]; rec.Neuron != 1 {
		t.Fatalf("recorded %+v", rec)
	}
}

func TestAPlanFileIsAppliedOnlyWhileTheRegistryHasNotMoved(t *testing.T) {
	d := startApplyDevnet(t)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.json")
	plan := filepath.Join(dir, "plan.json")
	write := func(version uint64) {
		t.Helper()
		f := &planfile.File{Host: d.ICURL, Proposals: []planfile.Entry{{Name: "halt-app1", Kind: "update_subnet", PayloadSHA256: declaredHash(t, "halt-app1"), RegistryVersion: version, Verdict: "ready"}}}
		if err := planfile.Write(plan, f); err != nil {
			t.Fatal(err)
		}
	}
	write(d.Registry.Version() - 1)
	_, _, err := runAlp(t, "submit\n", "apply", plan, "--config", applyConfig, "--state", statePath, "--yes")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "registry changed since the plan") {
		t.Fatalf("stale plan: %v", err)
	}
	write(d.Registry.Version())
	if out, errOut, err := runAlp(t, "submit\n", "apply", plan, "--config", applyConfig, "--state", statePath, "--yes"); err != nil {
		t.Fatalf("current plan: %v\n%s%s", err, out, errOut)
	}
	if loadStateFile(t, statePath).Proposals["halt-app1"] == nil {
		t.Fatal("not recorded")
	}
}

func TestImportRefusesIdZeroARecordedNameAndAnUndeclaredOne(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state.json")
	st := state.New()
	st.Proposals["halt-app1"] = &state.Proposal{Kind: "update_subnet", ProposalID: 5}
	if err := st.Save(statePath); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"add-node-08", "0"}, "proposal id 0 is not a proposal"},
		{[]string{"halt-app1", "7"}, "already recorded as proposal 5"},
		{[]string{"not-declared", "7"}, `proposal "not-declared" is not declared`},
	} {
		_, _, err := runAlp(t, "", append([]string{"import", "--config", applyConfig, "--state", statePath, "--host", "http://127.0.0.1:1"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("import %v: %v, want %q", tc.args, err, tc.says)
		}
	}
}

// proposeByHand makes the action of declared proposal name on the devnet
// the way another tool would, and returns its id.
func proposeByHand(t *testing.T, d *devnet.Devnet, name string) uint64 {
	t.Helper()
	title := "made by hand"
	id, gerr := d.Governance.MakeProposal(d.Identity, 4242, nns.MakeProposalRequest{Title: &title, Action: declared(t, name).Action})
	if gerr != nil {
		t.Fatal(gerr)
	}
	return id
}

func TestImportWarnsWhenThePayloadOnChainDiffersFromTheConfig(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	// proposal made by other means: the sev change, imported under halt-app1's name
	id := proposeByHand(t, d, "sev-on-app1")
	_, errOut, err := runAlp(t, "", "import", "halt-app1", strconv.FormatUint(id, 10), "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(errOut, "differs from the one the config declares") {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	if rec := loadStateFile(t, statePath).Proposals["halt-app1"]; rec.Status != state.StatusFailed || rec.PayloadSHA256 != declaredHash(t, "halt-app1") {
		t.Fatalf("recorded %+v", rec)
	}
}

func TestImportRefusesAProposalOfAnotherKindUnlessForcedAndRecordsThatItWas(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	// a remove_nodes proposal made by other means, imported under the name
	// of an update_subnet one
	id := proposeByHand(t, d, "drop-node-12")
	args := []string{"import", "halt-app1", strconv.FormatUint(id, 10), "--config", applyConfig, "--state", statePath}
	_, _, err := runAlp(t, "", args...)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), `runs NNS_FUNCTION_REMOVE_NODES, but "halt-app1" is a update_subnet proposal`) {
		t.Fatalf("import: exit %d, %v", exitCode(err), err)
	}
	if _, err := os.Stat(statePath); err == nil {
		t.Fatal("a refused import wrote state.json")
	}
	if _, errOut, err := runAlp(t, "", append(args, "--force")...); err != nil {
		t.Fatalf("import --force: %v\n%s", err, errOut)
	}
	if rec := loadStateFile(t, statePath).Proposals["halt-app1"]; !strings.Contains(rec.Forced, "runs NNS_FUNCTION_REMOVE_NODES") {
		t.Fatalf("recorded %+v, want it marked forced", rec)
	}
}

func TestStatusFollowsAProposalFromOpenToExecutedAcrossTheVotingPeriod(t *testing.T) {
	// Governance keeps its deadlines by a clock the test moves, so the
	// proposal stays open however slowly apply and status run, and the
	// voting period ends when the test says.
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	d := startApplyDevnetOptions(t, devnet.Options{VotingPeriod: time.Hour, Now: func() time.Time { return time.Unix(0, now.Load()) }}, func(*devnet.Fleet) {})
	statePath := filepath.Join(t.TempDir(), "state.json")
	if out, errOut, err := runAlp(t, "submit\n", "apply", "halt-app1", "--config", applyConfig, "--state", statePath, "--yes"); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	out, _, err := runAlp(t, "", "status", "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(out, "1 proposal(s): 1 open") || !strings.Contains(out, "recorded none → open") {
		t.Fatalf("status while open: %v\n%s", err, out)
	}
	if rec := loadStateFile(t, statePath).Proposals["halt-app1"]; rec.Status != state.StatusOpen || rec.ResolvedAt != "" {
		t.Fatalf("recorded %+v", rec)
	}
	now.Add(int64(time.Hour + time.Second))
	d.Governance.Tick()
	out, _, err = runAlp(t, "", "status", "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(out, "1 executed") || !strings.Contains(out, "recorded open → executed") {
		t.Fatalf("status after the voting period: %v\n%s", err, out)
	}
	if rec := loadStateFile(t, statePath).Proposals["halt-app1"]; rec.Status != state.StatusExecuted || rec.ResolvedAt == "" {
		t.Fatalf("recorded %+v", rec)
	}
}

func TestAProposalGovernancePurgedIsImportedAndReadBackFromTheDashboard(t *testing.T) {
	startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	// proposal 120 was decided long ago; governance no longer has it
	out, errOut, err := runAlp(t, "", "import", "add-node-08", "120", "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(out, "[via ICP dashboard; purged from governance]") {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	rec := loadStateFile(t, statePath).Proposals["add-node-08"]
	if !strings.Contains(rec.Uncompared, "the ICP dashboard gives no action for proposal 120") {
		t.Errorf("a proposal the dashboard gives no action for is recorded as compared: %+v", rec)
	}
	decided := time.Date(2026, 6, 5, 9, 0, 0, 0, time.UTC)
	if rec.ProposalID != 120 || rec.Status != state.StatusExecuted || rec.ResolvedAt == "" || !parsed(t, rec.SubmittedAt).Before(decided) {
		t.Fatalf("recorded %+v", rec)
	}
	out, _, err = runAlp(t, "", "status", "--config", applyConfig, "--state", statePath)
	if err != nil || !strings.Contains(out, "executed") || !strings.Contains(out, "[via ICP dashboard; purged from governance]") {
		t.Fatalf("status: %v\n%s", err, out)
	}
}

func TestApplyNamesWhatIsMissingOrWrongInItsArguments(t *testing.T) {
	d := startApplyDevnet(t)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.json")
	plan := filepath.Join(dir, "plan.json")
	entry := func(name string) planfile.Entry {
		return planfile.Entry{Name: name, PayloadSHA256: declaredHash(t, name), RegistryVersion: d.Registry.Version(), Verdict: "ready"}
	}
	if err := planfile.Write(plan, &planfile.File{Host: d.ICURL, Proposals: []planfile.Entry{entry("halt-app1"), entry("add-node-08")}}); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(dir, "elsewhere.json")
	if err := planfile.Write(elsewhere, &planfile.File{Host: "https://icp-api.io", Proposals: []planfile.Entry{entry("halt-app1")}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ALP_IDENTITY", "")
	identity := []string{"--identity", d.IdentityPath}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"add-node-08"}, 1, "no identity: give --identity key.pem or set $ALP_IDENTITY"},
		{append([]string{"no-such-proposal"}, identity...), 1, `"no-such-proposal" is neither a declared proposal nor a plan file`},
		{append([]string{plan}, identity...), 1, "planned 2 proposals (halt-app1, add-node-08); name the one to apply"},
		{append([]string{plan, "drop-node-12"}, identity...), 1, `did not plan proposal "drop-node-12"`},
		{append([]string{elsewhere}, identity...), 2, "the plan was made against https://icp-api.io"},
	} {
		args := append([]string{"apply", "--config", applyConfig, "--state", statePath}, tc.args...)
		_, _, err := runAlp(t, "", args...)
		if exitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("apply %v: exit %d, %v; want exit %d saying %q", tc.args, exitCode(err), err, tc.code, tc.says)
		}
	}
	out, errOut, err := runAlp(t, "", append([]string{"apply", "--config", applyConfig, "--state", statePath, plan, "add-node-08"}, identity...)...)
	if err != nil || !strings.Contains(out, "dry run only") || !strings.Contains(errOut, "unchanged since the plan") {
		t.Fatalf("apply PLANFILE NAME: %v\n%s%s", err, out, errOut)
	}
	out, _, err = runAlp(t, "", append([]string{"apply", "--config", applyConfig, "--state", statePath, elsewhere, "--output", "json"}, identity...)...)
	var stopped applyJSON
	decodeOne(t, out, &stopped)
	if exitCode(err) != 2 || stopped.Outcome != "stopped" || !strings.Contains(stopped.Reason, "the plan was made against") {
		t.Fatalf("a plan from another host, as JSON: exit %d %+v", exitCode(err), stopped)
	}
}

// parsed reads a recorded time alp wrote.
func parsed(t *testing.T, at state.Time) time.Time {
	t.Helper()
	v, ok := at.Parsed()
	if !ok {
		t.Fatalf("recorded time %q is not RFC 3339", at)
	}
	return v
}

func TestApplysPreflightNamesNodesAsPlanDoes(t *testing.T) {
	startApplyDevnet(t)
	out, errOut, err := runAlp(t, "", "apply", "add-node-08", "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out+errOut, "node node_08 (lea5s-hn4vi-mj74k-uhunx-sj3ct-s3hrh-xra7u-mc7bo-apknn-bryyv-pae) is registered") {
		t.Fatalf("the preflight does not name node_08:\n%s%s", out, errOut)
	}
}
