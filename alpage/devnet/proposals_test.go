package devnet

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/nns"
)

// TestTheExampleProposalsExecuteOnTheDevnetAsTheRulesSay submits the
// proposals of examples/fleet/proposals.hcl, built by alpage/proposal, to the
// devnet with its identity and neuron: alp's payload encoder against the
// local registry's decoder and rules.
func TestTheExampleProposalsExecuteOnTheDevnetAsTheRulesSay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := config.Load("../../examples/fleet/proposals.hcl")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(ctx, Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pem, err := os.ReadFile(d.IdentityPath)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.FromPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{URL: d.ICURL, Identity: id, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	g := nns.GovernanceClient{Caller: a}
	want := map[string]struct {
		status nns.ProposalStatus
		reason string
	}{
		"add-node-08":  {nns.StatusExecuted, ""},
		"upgrade-app1": {nns.StatusExecuted, ""}, // a no-op the registry accepts; preflight is what flags it
		"drop-node-12": {nns.StatusExecuted, ""},
		"sev-on-app1":  {nns.StatusFailed, "sev_enabled"},
	}
	for _, cp := range cfg.Proposals {
		p, err := proposal.Build(cp)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := g.MakeProposal(ctx, *cfg.Provider.Neuron, p.Request())
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		info, err := g.GetProposalInfo(ctx, pid)
		if err != nil {
			t.Fatal(err)
		}
		w := want[p.Name]
		if nns.ProposalStatus(info.Status) != w.status || nns.Topic(info.Topic) != p.Topic {
			t.Errorf("%s: %s topic %s, want %s topic %s (%+v)", p.Name, nns.ProposalStatus(info.Status), nns.Topic(info.Topic), w.status, p.Topic, info.FailureReason)
		}
		if w.reason != "" && (info.FailureReason == nil || !strings.Contains(info.FailureReason.ErrorMessage, w.reason)) {
			t.Errorf("%s: failure %+v, want %q", p.Name, info.FailureReason, w.reason)
		}
	}
}
