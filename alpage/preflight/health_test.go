package preflight

import (
	"context"
	"errors"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/source"
)

func adding(ids ...string) *config.Proposal {
	return &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(ids...)}}
}

func TestANodeAddedMustBeHealthyByTheDashboardAndItsOwnWord(t *testing.T) {
	_, f := startDevnet(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		node string
		opts Options
		want expect
	}{
		{"a node the dashboard lists UNASSIGNED and that says healthy joins", n2, Options{},
			expect{VerdictReady, map[Severity][]string{OK: {"node " + n2 + " is healthy: the ICP dashboard lists it UNASSIGNED, and its own status endpoint says healthy"}}}},
		{"a node the dashboard lists DOWN is refused", id("down"), Options{},
			expect{VerdictRefused, map[Severity][]string{Refused: {"is down: the ICP dashboard lists it DOWN, and its own status endpoint did not answer", "pass --force"}}}},
		{"a node that lags is refused as degraded", id("lagging"), Options{},
			expect{VerdictRefused, map[Severity][]string{Refused: {"is degraded: the ICP dashboard lists it DEGRADED, and its own status endpoint says certified_state_behind"}}}},
		{"--force adds a DOWN node with a warning", id("down"), Options{Force: true},
			expect{VerdictReady, map[Severity][]string{Warning: {"is down", "adding it anyway (--force)"}}}},
	} {
		r, err := f.Run(ctx, adding(tc.node), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		tc.want.assert(t, tc.name, r)
		for _, c := range r.Checks {
			if strings.Contains(c.Message, "lists it") && c.Source != source.DashboardLabel {
				t.Errorf("%s: a verdict resting on the dashboard is not labelled: %+v", tc.name, c)
			}
		}
	}

	f.Dashboard = source.NewDashboard("http://127.0.0.1:1", nil)
	r, err := f.Run(ctx, adding(id("down")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictRefused, map[Severity][]string{Refused: {"is unknown: the ICP dashboard's node list could not be read", "its own status endpoint did not answer"}}}.assert(t, "neither source answers", r)
	r, err = f.Run(ctx, adding(n2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect{VerdictReady, map[Severity][]string{OK: {"is healthy: its own status endpoint says healthy, and the ICP dashboard's node list could not be read"}}}.assert(t, "the node's own word without the dashboard", r)
}

func TestTheWorseOfTwoAnswersDecidesAndNoAnswerIsUnknown(t *testing.T) {
	listed := func(status, alert string) *source.DashboardNode {
		return &source.DashboardNode{Status: status, Alertname: alert}
	}
	says := func(s string) ownHealth { return ownHealth{status: s} }
	silent := ownHealth{err: errors.New("connection refused")}
	for _, tc := range []struct {
		name      string
		d         *source.DashboardNode
		own       ownHealth
		want      string
		dashboard bool
	}{
		{"both healthy", listed("UP", ""), says("healthy"), kinds.HealthHealthy, true},
		{"listed UP, node unreachable", listed("UP", ""), silent, kinds.HealthHealthy, true},
		{"listed DOWN though it answers", listed("DOWN", ""), says("healthy"), kinds.HealthDown, true},
		{"listed UP, but the node is starting", listed("UP", ""), says("starting"), kinds.HealthDegraded, false},
		{"a missing metrics target is no fault", listed("DEGRADED", "IC_PrometheusTargetMissing"), silent, kinds.HealthHealthy, true},
		{"not listed, the node says healthy", nil, says("healthy"), kinds.HealthHealthy, false},
		{"not listed, unreachable", nil, silent, kinds.HealthUnknown, false},
		{"a status alp does not know, unreachable", listed("UNRECOGNIZED", ""), silent, kinds.HealthUnknown, false},
	} {
		got := judgeHealth(tc.d, nil, tc.own)
		if got.Health != tc.want || got.Dashboard != tc.dashboard || got.Why == "" {
			t.Errorf("%s: %+v, want %s (dashboard %v)", tc.name, got, tc.want, tc.dashboard)
		}
	}
}

func TestARemovalThatLeavesTooFewHealthyMembersIsWarned(t *testing.T) {
	m3, m4 := id("m3"), id("m4")
	h := healthy(n1, n2, m3)
	h[m4] = kinds.HealthFacts{Health: kinds.HealthDown, Why: "the ICP dashboard lists it DOWN"}
	live := kinds.MembershipFacts{Subnet: subnetWith("v1", n1, n2, m3, m4), Health: h}
	removing := func(ids ...string) *config.Proposal {
		return &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Remove: refs(ids...)}}
	}
	// 4 members, 1 down: f(4) = 1, it makes progress; 3 left, 1 down: f(3) = 0, it stalls
	r := Evaluate(removing(n1), factsOf(live), Options{})
	expect{VerdictReady, map[Severity][]string{Warning: {"has 3 members, 2 of them known healthy; it makes progress only with at least 3 healthy", "not known healthy: " + m4}}}.assert(t, "removing a healthy member", r)
	r = Evaluate(removing(m4), factsOf(live), Options{})
	for _, c := range r.Checks {
		if strings.Contains(c.Message, "makes progress") {
			t.Fatalf("removing the down member is warned: %s", c.Message)
		}
	}
}
