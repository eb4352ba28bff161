package generate

import (
	"strings"
	"testing"

	"alpnib.dev/alpage/kinds"
)

// Each change a proposal makes names the declared line it moves the fleet
// away from, and nothing when the declaration already agrees.
func TestAwayNamesTheDeclaredLineAChangeMakesUntrue(t *testing.T) {
	res := fleet()
	for _, tc := range []struct {
		c    Change
		want string
	}{
		{Change{Op: kinds.OpAdd, Subject: n4, Target: app1}, "node node_4 (:0) is declared in no subnet, not in subnet app1: declare subnet = subnet.app1.id"},
		{Change{Op: kinds.OpAdd, Subject: n1, Target: app1}, ""},
		{Change{Op: kinds.OpRemove, Subject: n1, Target: app1}, "node node_1 (:0) is declared in subnet app1, which it leaves: remove its subnet line"},
		{Change{Op: kinds.OpRemoveNode, Subject: n5}, "node node_5 (:0) is declared registered, not deregistered: declare decommissioned = true"},
		{Change{Op: kinds.OpRemoveOperator, Subject: opOld}, "node operator op_old (:0) is declared, not deleted: declare decommissioned = true"},
		{Change{Op: kinds.OpRemoveProvider, Subject: provGone}, "node provider prov_gone (:0) is declared, not removed: declare decommissioned = true"},
	} {
		if got := Away(res, tc.c); got != tc.want {
			t.Errorf("%v:\n got %q\nwant %q", tc.c, got, tc.want)
		}
	}
	node(res, "node_1").Version = vOld
	if got := Away(res, Change{Op: kinds.OpDeploy, Subject: app1, Target: vNew}); !strings.Contains(got, "node(s) node_1 (:0) of subnet app1 are declared on another GuestOS version than new") {
		t.Errorf("deploy: %q", got)
	}
}

// A generated proposal that would reverse what a recorded proposal made is
// left out whole (alp never proposes an undo), with a note naming that
// proposal and the stale line; once the declaration says what executed,
// the drift it still has is generated.
func TestGenerateDoesNotUndoWhatARecordedProposalMade(t *testing.T) {
	res := fleet()
	l := live()
	s := l.Subnets[app1]
	s.Members = append(s.Members, n4) // n4 joined app1 by "add-n4"; resources.hcl still says no subnet
	l.Subnets[app1] = s
	node(res, "node_2").Subnet = "" // and n2 is declared out of app1: that one is wanted
	got := Generate(Input{Res: res, Live: l, Made: map[Change]string{{Op: kinds.OpAdd, Subject: n4, Target: app1}: "add-n4 (proposal 7, executed)"}})
	var removes []string
	for _, p := range got.Proposals {
		for _, c := range p.Closes {
			if c.Op == kinds.OpRemove {
				removes = append(removes, c.Subject)
			}
		}
	}
	if len(removes) != 0 {
		t.Fatalf("a generated proposal removes %v; one that also undoes add-n4 must be left out, with a note", removes)
	}
	if !strings.Contains(strings.Join(got.Notes, "\n"), "it would undo add-n4 (proposal 7, executed); the declaration is stale: node node_4 (:0) is declared in no subnet, not in subnet app1") {
		t.Fatalf("notes: %q", got.Notes)
	}
	node(res, "node_4").Subnet = app1
	got = Generate(Input{Res: res, Live: l, Made: map[Change]string{{Op: kinds.OpAdd, Subject: n4, Target: app1}: "add-n4 (proposal 7, executed)"}})
	if len(got.Proposals) != 1 || len(got.Proposals[0].Closes) != 1 || got.Proposals[0].Closes[0] != (Change{Op: kinds.OpRemove, Subject: n2, Target: app1}) {
		t.Fatalf("with node_4 declared in app1, want only node_2's removal; got %v", nameList(got.Proposals))
	}
}
