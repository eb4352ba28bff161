package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
)

// A node provider's day two on a devnet: an operator's allowance raised
// in resources, a second operator declared and absent on-chain, ten nodes
// declared on another HostOS version. reconcile reports the drift, plan
// --generate writes the three proposals (one deploy_hostos for the ten),
// apply executes each, reconcile exits 0, and a second --generate writes
// nothing.
func TestADayTwoOfOperatorsAndHostOSIsClosedByGeneratedProposals(t *testing.T) {
	startDevnetFile(t, "testdata/generate-day2/fleet.json", devnet.Options{}, func(*devnet.Fleet) {})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	config, statePath := generateDirFrom(t, "testdata/generate-day2")
	out := filepath.Join(filepath.Dir(config), "generated.hcl")

	stdout, _, err := runAlp(t, "", "reconcile", "--config", config, "--state", statePath, "--all")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("reconcile before: %v, want drift\n%s", err, stdout)
	}
	for _, s := range []string{"config-mismatch", "node_allowance declared=5 live=2", "gone", "hostos-mismatch"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("reconcile before lacks %q:\n%s", s, stdout)
		}
	}
	if n := strings.Count(stdout, "hostos-mismatch"); n != 10 {
		t.Errorf("%d nodes drift in HostOS, want 10:\n%s", n, stdout)
	}

	hcl, errOut := generateTo(t, out, config, statePath)
	want := []string{"add-operator-new-ops", "update-operator-zh1-ops", "deploy-hostos-newer-to-10-nodes"}
	if got := generatedNames(hcl); !slices.Equal(got, want) {
		t.Fatalf("generated %v, want %v\n%s%s", got, want, hcl, errOut)
	}
	for _, s := range []string{"node_operator_id = node_operator.new_ops.id", "node_provider_id = node_provider.day2.id",
		"node_allowance   = 5", "hostos_version_id = hostos_version.newer.id", "id = node.node_10.id"} {
		if !strings.Contains(hcl, s) {
			t.Errorf("the blocks lack %q:\n%s", s, hcl)
		}
	}
	appendFile(t, config, out)
	for _, name := range want {
		if out, errOut, err := runAlp(t, "submit\n", "apply", name, "--yes", "--config", config, "--state", statePath); err != nil {
			t.Fatalf("apply %s: %v\n%s%s", name, err, out, errOut)
		}
	}
	if out, errOut, err := runAlp(t, "", "reconcile", "--config", config, "--state", statePath); err != nil {
		t.Fatalf("reconcile after: %v\n%s%s", err, out, errOut)
	}
	again := filepath.Join(filepath.Dir(config), "again.hcl")
	_, errOut, err = runAlp(t, "", "plan", "--generate", "--out", again, "--config", config, "--state", statePath)
	if _, statErr := os.Stat(again); err != nil || statErr == nil || !strings.Contains(errOut, "nothing to generate") {
		t.Fatalf("plan --generate once in sync: %v (file: %v)\n%s", err, statErr, errOut)
	}
}

// A proposal of each new kind submitted by other means is recognised by
// alp import as its declared proposal: the kind by its action, the payload
// by its hash; one of another new kind is refused as such.
func TestImportRecognisesOperatorAndHostOSProposalsMadeByOtherMeans(t *testing.T) {
	d := startApplyDevnet(t)
	statePath := filepath.Join(t.TempDir(), "state.json")
	for _, name := range []string{"add-new-operator", "raise-ge1-allowance", "hostos-node-08"} {
		id := proposeByHand(t, d, name)
		_, errOut, err := runAlp(t, "", "import", name, strconv.FormatUint(id, 10), "--config", applyConfig, "--state", statePath)
		if err != nil || strings.Contains(errOut, "differs") || strings.Contains(errOut, "not compared") {
			t.Fatalf("import %s: %v\n%s", name, err, errOut)
		}
		if rec := loadStateFile(t, statePath).Proposals[name]; rec == nil || rec.ProposalID != id || rec.PayloadSHA256 != declaredHash(t, name) || rec.Status != state.StatusExecuted {
			t.Fatalf("import %s recorded %+v", name, rec)
		}
	}
	id := proposeByHand(t, d, "add-new-operator")
	_, errOut, err := runAlp(t, "", "import", "raise-ge1-allowance", strconv.FormatUint(id, 10), "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "s.json"))
	if err == nil || !strings.Contains(err.Error()+errOut, "runs NNS_FUNCTION_ASSIGN_NOID") {
		t.Fatalf("an add_node_operator imported as an update: %v\n%s", err, errOut)
	}
}

// Every kind's payload is claimed by that kind alone: the apply config
// declares one proposal of each kind of the table, and the action each
// builds is its own kind's and no other's (kinds.Claimant is nil for an
// action two kinds claim).
func TestEveryKindsPayloadIsClaimedByThatKindAlone(t *testing.T) {
	cfg, err := config.Load(applyConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds.All {
		i := slices.IndexFunc(cfg.Proposals, func(p *config.Proposal) bool { return string(p.Kind) == k.Name() })
		if i < 0 {
			t.Errorf("%s declares no %s proposal", applyConfig, k.Name())
			continue
		}
		p, err := proposal.Build(cfg.Proposals[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds.Claimant(p.Action); got != k {
			t.Errorf("%s's action (%s) is claimed by %v, not by %s alone", cfg.Proposals[i].Name, kinds.ShapeOf(p.Action), got, k.Name())
		}
	}
}
