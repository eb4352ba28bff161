package preflight

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
	"alpnib.dev/internal/term"
)

func id(tag string) string { return principal.SelfAuthenticating([]byte(tag)).String() }

var (
	subnet = id("subnet")
	other  = id("other subnet")
	n1, n2 = id("n1"), id("n2")
	n3, n4 = id("n3"), id("n4")
)

func subnetWith(version string, nodes ...string) *nns.SubnetRecord {
	rec := &nns.SubnetRecord{ReplicaVersionID: version}
	for _, n := range nodes {
		rec.Membership = append(rec.Membership, principal.MustDecode(n).Bytes())
	}
	return rec
}

// factsOf is what a preflight read: f, the facts of the proposal's kind.
func factsOf(f kinds.Facts) Live { return Live{Facts: f} }

func refs(ids ...string) []kinds.NodeRef {
	out := make([]kinds.NodeRef, len(ids))
	for i, n := range ids {
		out[i] = kinds.NodeRef{ID: n}
	}
	return out
}

// expect asserts the verdict and that each fragment appears in a check of
// the given severity.
type expect struct {
	verdict Verdict
	checks  map[Severity][]string
}

func (e expect) assert(t *testing.T, name string, r Report) {
	t.Helper()
	if r.Verdict != e.verdict {
		t.Errorf("%s: verdict %s, want %s\n%s", name, r.Verdict, e.verdict, dump(r))
	}
	for sev, frags := range e.checks {
		for _, frag := range frags {
			found := false
			for _, c := range r.Checks {
				if c.Severity == sev && strings.Contains(c.Message, frag) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no %s check mentions %q\n%s", name, sev, frag, dump(r))
			}
		}
	}
}

// healthy is every node of ids known healthy.
func healthy(ids ...string) map[string]kinds.HealthFacts {
	out := map[string]kinds.HealthFacts{}
	for _, id := range ids {
		out[id] = kinds.HealthFacts{Health: kinds.HealthHealthy, Why: "its own status endpoint says healthy"}
	}
	return out
}

func dump(r Report) string {
	var b strings.Builder
	for _, c := range r.Checks {
		b.WriteString("  " + string(c.Severity) + " " + c.Message + "\n")
	}
	return b.String()
}

func TestMembershipRules(t *testing.T) {
	type4 := int32(7)
	live := func() kinds.MembershipFacts {
		return kinds.MembershipFacts{Subnet: subnetWith("v1", n1, n2), Nodes: map[string]NodeFacts{
			n3: {Registered: true}, n4: {Registered: true, MemberOf: other}, id("gone"): {},
			id("unread"): {Err: "timeout"}, id("engine-node"): {Registered: true, RewardType: &type4},
		}, Health: healthy(n1, n2, n3, n4, id("engine-node"))}
	}
	type11 := int32(6)
	engineLive := func() kinds.MembershipFacts {
		s := live()
		s.Subnet.SubnetType, _ = nns.SubnetTypeNamed("cloud_engine")
		s.Nodes[n3] = NodeFacts{Registered: true, RewardType: &type11}
		s.Nodes[id("engine-node")] = NodeFacts{Registered: true, RewardType: &type4}
		return s
	}
	sevLive := func(chip bool) kinds.MembershipFacts {
		s := live()
		on := true
		s.Subnet.Features = &nns.SubnetFeatures{SevEnabled: &on}
		s.Nodes[n3] = NodeFacts{Registered: true, HasChip: chip}
		return s
	}
	for _, tc := range []struct {
		name        string
		add, remove []string
		live        kinds.MembershipFacts
		want        expect
	}{
		{"adding a free node and removing a member is ready", []string{n3}, []string{n1}, live(),
			expect{VerdictReady, map[Severity][]string{OK: {"node " + n3 + " is registered and in no subnet", "node " + n1 + " is a member of subnet " + subnet + "; it leaves"}}}},
		{"re-adding the first member is a warned no-op: the registry collapses it", []string{n1}, nil, live(),
			expect{VerdictNoOp, map[Severity][]string{Warning: {"already a member"}, Note: {"changes nothing"}}}},
		{"re-adding a later member is refused: the registry would list it twice", []string{n2}, nil, live(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"would list it twice", "Repeated nodes in subnet"}}}},
		{"removing a non-member is refused: the registry refuses the whole proposal", nil, []string{n3}, live(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"is not a member", "do not belong to the provided subnet"}}}},
		{"one real change beside a collapsed member keeps the proposal ready", []string{n3}, nil, live(),
			expect{VerdictReady, map[Severity][]string{OK: {n3}}}},
		{"the first member re-added right after the new nodes collapses into itself", []string{n3, n1}, nil, live(),
			expect{VerdictReady, map[Severity][]string{Warning: {"already a member"}, OK: {n3}}}},
		{"the first member re-added before a new node is refused: it no longer meets itself", []string{n1, n3}, nil, live(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"would list it twice"}, OK: {n3}}}},
		{"a member of another subnet is refused", []string{n4}, nil, live(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"member of another subnet, " + other}}}},
		{"an unregistered node is refused", []string{id("gone")}, nil, live(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"is not registered"}}}},
		{"a node without a chip joining a SEV subnet is refused", []string{n3}, nil, sevLive(false),
			expect{VerdictRefused, map[Severity][]string{Refused: {"has no chip id and subnet " + subnet + " is SEV-enabled"}}}},
		{"a type4 node joining an application subnet is refused", []string{id("engine-node")}, nil, live(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"has node_reward_type type4; subnet " + subnet + " is not a cloud engine"}}}},
		{"a node of another type joining a cloud engine is refused", []string{n3}, nil, engineLive(),
			expect{VerdictRefused, map[Severity][]string{Refused: {"has node_reward_type type1.1; subnet " + subnet + " is a cloud engine"}}}},
		{"a type4 node joins a cloud engine", []string{id("engine-node")}, nil, engineLive(),
			expect{VerdictReady, map[Severity][]string{OK: {"is registered and in no subnet"}}}},
		{"a node with a chip joins a SEV subnet", []string{n3}, nil, sevLive(true),
			expect{VerdictReady, map[Severity][]string{OK: {"node " + n3 + " is registered and in no subnet"}}}},
		{"an unreadable node is a warning", []string{id("unread")}, nil, live(),
			expect{VerdictReady, map[Severity][]string{Warning: {"timeout"}}}},
		{"an unknown subnet is refused", []string{n3}, nil, kinds.MembershipFacts{},
			expect{VerdictRefused, map[Severity][]string{Refused: {"not in the registry"}}}},
	} {
		p := &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(tc.add...), Remove: refs(tc.remove...)}}
		tc.want.assert(t, tc.name, Evaluate(p, factsOf(tc.live), Options{}))
	}
}

func TestDeployGuestOSRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		target  string
		version VersionFacts
		opts    Options
		want    expect
	}{
		{"an elected new version is ready and named", "v2", VersionFacts{Elected: true, Release: "rel-2", ProposalID: 7}, Options{},
			expect{VerdictReady, map[Severity][]string{OK: {"runs v1 and moves to v2", "v2 is elected"}, Note: {"release rel-2, elected by proposal 7"}}}},
		{"the current version is a no-op", "v1", VersionFacts{Elected: true}, Options{},
			expect{VerdictNoOp, map[Severity][]string{Warning: {"already runs v1"}, Note: {"no executed election proposal"}}}},
		{"an unelected version is refused", "v3", VersionFacts{}, Options{},
			expect{VerdictRefused, map[Severity][]string{Refused: {"v3 is not elected"}}}},
		{"--force submits an unelected version with a warning", "v3", VersionFacts{}, Options{Force: true, ForApply: true},
			expect{VerdictReady, map[Severity][]string{Warning: {"not elected", "--force"}}}},
		{"plan degrades a failed lookup to a warning", "v2", VersionFacts{ElectedErr: "502"}, Options{},
			expect{VerdictReady, map[Severity][]string{Warning: {"could not tell whether v2 is elected (502)"}}}},
		{"apply refuses on a failed lookup", "v2", VersionFacts{ElectedErr: "502"}, Options{ForApply: true},
			expect{VerdictRefused, map[Severity][]string{Refused: {"could not tell"}}}},
		{"apply --force proceeds on a failed lookup", "v2", VersionFacts{ElectedErr: "502"}, Options{ForApply: true, Force: true},
			expect{VerdictReady, map[Severity][]string{Warning: {"could not tell"}}}},
		{"an unreadable dashboard is only a note", "v2", VersionFacts{Elected: true, ReleaseErr: "dashboard down"}, Options{},
			expect{VerdictReady, map[Severity][]string{Note: {"release name unavailable (dashboard down)"}}}},
	} {
		p := &config.Proposal{Name: "d", Kind: config.KindDeployGuestOS, Body: &kinds.DeployGuestOS{SubnetID: subnet, ReplicaVersionID: tc.target}}
		tc.want.assert(t, tc.name, Evaluate(p, factsOf(kinds.DeployGuestOSFacts{Subnet: subnetWith("v1"), Version: tc.version}), tc.opts))
	}
}

func ptr[T any](v T) *T { return &v }

func TestUpdateSubnetRules(t *testing.T) {
	off := false
	fiftyOne := make([]string, 51)
	for i := range fiftyOne {
		fiftyOne[i] = fmt.Sprintf("key-%d", i)
	}
	live := func() kinds.UpdateSubnetFacts {
		rec := subnetWith("v1", n1)
		rec.MaxNumberOfCanisters = 100
		rec.SSHReadonlyAccess = []string{"key-a", "key-b"}
		rec.Features = &nns.SubnetFeatures{HTTPRequests: true, SevEnabled: &off}
		rec.SubnetType, _ = nns.SubnetTypeNamed("application")
		return kinds.UpdateSubnetFacts{Subnet: rec}
	}
	for _, tc := range []struct {
		name string
		u    kinds.UpdateSubnet
		want expect
	}{
		{"each changed field is printed", kinds.UpdateSubnet{MaxNumberOfCanisters: ptr(uint64(200)), IsHalted: ptr(true)},
			expect{VerdictReady, map[Severity][]string{OK: {"max_number_of_canisters: 100 → 200", "is_halted: false → true"}}}},
		{"nothing different is a no-op", kinds.UpdateSubnet{MaxNumberOfCanisters: ptr(uint64(100)), SSHReadonlyAccess: &[]string{"key-b", "key-a"}},
			expect{VerdictNoOp, map[Severity][]string{Note: {"max_number_of_canisters is already 100", "changes nothing"}}}},
		{"an ssh list that drops a key is flagged", kinds.UpdateSubnet{SSHReadonlyAccess: &[]string{"key-a", "key-c"}},
			expect{VerdictFlagged, map[Severity][]string{Flagged: {"drops 1 existing key(s) (key-b)"}}}},
		{"an empty ssh list is flagged", kinds.UpdateSubnet{SSHReadonlyAccess: &[]string{}},
			expect{VerdictFlagged, map[Severity][]string{Flagged: {"drops 2"}}}},
		{"a sev_enabled change is refused", kinds.UpdateSubnet{Features: &kinds.Features{HTTPRequests: true, SevEnabled: true}},
			expect{VerdictRefused, map[Severity][]string{Refused: {"features.sev_enabled = true differs from the live false"}}}},
		{"restating sev_enabled while changing a feature is ready", kinds.UpdateSubnet{Features: &kinds.Features{CanisterSandboxing: true, HTTPRequests: true}},
			expect{VerdictReady, map[Severity][]string{OK: {"features.canister_sandboxing: false → true"}, Note: {"features.sev_enabled is already false"}}}},
		{"an unset limit reads unset", kinds.UpdateSubnet{ResourceLimits: &kinds.ResourceLimits{MaximumStateSize: 1, MaximumStateDelta: 2}},
			expect{VerdictReady, map[Severity][]string{OK: {"resource_limits.maximum_state_size: unset → 1"}}}},
		{"an ssh list of more than 50 keys is refused", kinds.UpdateSubnet{SSHBackupAccess: &fiftyOne},
			expect{VerdictRefused, map[Severity][]string{Refused: {"ssh_backup_access names 51 keys", "at most 50"}}}},
		{"admins on a subnet that is not rented are refused", kinds.UpdateSubnet{SubnetAdmins: &[]string{n2}},
			expect{VerdictRefused, map[Severity][]string{Refused: {"is an application subnet on the normal cost schedule", "only on a rented subnet"}}}},
		{"clearing the admins of a subnet that is not rented is fine", kinds.UpdateSubnet{SubnetAdmins: &[]string{}},
			expect{VerdictNoOp, map[Severity][]string{Note: {"subnet_admins is already []"}}}},
	} {
		u := tc.u
		u.SubnetID = subnet
		p := &config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: &u}
		tc.want.assert(t, tc.name, Evaluate(p, factsOf(live()), Options{}))
	}
	// The stored record carries query limits and fields alp does not
	// model: the limits are inherited (noted), a field inside a declared
	// resource_limits or features would be reset (refused), one elsewhere
	// is untouched, and an admin dropped is flagged.
	instr := uint64(20_000_000_000)
	stored := live()
	stored.SubnetPB = decodeFuture(t)
	stored.SubnetPB.ResourceLimits.MaximumQueryInstructions = &instr
	limits := kinds.UpdateSubnet{SubnetID: subnet, ResourceLimits: &kinds.ResourceLimits{MaximumStateSize: 1, MaximumStateDelta: 2}}
	expect{VerdictRefused, map[Severity][]string{
		Note:    {"resource_limits.maximum_query_instructions is inherited: the payload sends its live value (20000000000)", "resource_limits.maximum_query_walltime_seconds is inherited: the payload sends its live value (40)"},
		Refused: {"the live resource_limits carries field 5, which alp does not model and cannot send", "would reset it"},
	}}.assert(t, "an unmodelled part of resource_limits is refused",
		Evaluate(&config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: &limits}, factsOf(stored), Options{}))
	halt := kinds.UpdateSubnet{SubnetID: subnet, IsHalted: ptr(true)}
	expect{VerdictReady, map[Severity][]string{OK: {"is_halted: false → true"}}}.assert(t, "unmodelled fields of blocks not sent are untouched",
		Evaluate(&config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: &halt}, factsOf(stored), Options{}))
	withAdmin := live()
	withAdmin.Subnet.CanisterCyclesCostSchedule = nns.CostSchedule{Free: &struct{}{}}
	withAdmin.Subnet.SubnetAdmins = []principal.Principal{principal.MustDecode(n1)}
	drop := kinds.UpdateSubnet{SubnetID: subnet, SubnetAdmins: &[]string{n2}}
	expect{VerdictFlagged, map[Severity][]string{Flagged: {"subnet_admins drops 1 existing admin(s) (" + n1 + ")"}}}.assert(t, "dropping an admin is flagged",
		Evaluate(&config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: &drop}, factsOf(withAdmin), Options{}))

	rented := live()
	rented.Subnet.CanisterCyclesCostSchedule = nns.CostSchedule{Free: &struct{}{}}
	u := kinds.UpdateSubnet{SubnetID: subnet, SubnetAdmins: &[]string{n2}}
	expect{VerdictReady, map[Severity][]string{OK: {"subnet_admins: [] → [" + n2 + "]"}}}.assert(t, "admins on a rented subnet are ready",
		Evaluate(&config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: &u}, factsOf(rented), Options{}))
}

func TestRemoveNodesRules(t *testing.T) {
	live := factsOf(map[string]NodeFacts{n1: {Registered: true, MemberOf: subnet}, n2: {Registered: true}, n3: {}})
	for _, tc := range []struct {
		name  string
		nodes []string
		want  expect
	}{
		{"a free node is deregistered", []string{n2}, expect{VerdictReady, map[Severity][]string{OK: {n2 + " is registered and in no subnet"}}}},
		{"a subnet member is refused", []string{n1, n2}, expect{VerdictRefused, map[Severity][]string{Refused: {"still a member of subnet " + subnet}}}},
		{"a deregistered node is a warned no-op", []string{n3}, expect{VerdictNoOp, map[Severity][]string{Warning: {"no longer registered"}}}},
	} {
		p := &config.Proposal{Name: "r", Kind: config.KindRemoveNodes, Body: &kinds.RemoveNodes{Nodes: refs(tc.nodes...)}}
		tc.want.assert(t, tc.name, Evaluate(p, live, Options{}))
	}
}

func TestRemoveNodeOperatorsRules(t *testing.T) {
	busy, idle, gone, blind := id("busy"), id("idle"), id("gone"), id("blind")
	live := factsOf(map[string]OperatorFacts{
		busy: {Registered: true, Nodes: []string{n1, n2}}, idle: {Registered: true}, gone: {}, blind: {Registered: true, NodesErr: "explorer down"},
	})
	for _, tc := range []struct {
		name string
		ops  []string
		want expect
	}{
		{"an operator without nodes is ready", []string{idle}, expect{VerdictReady, map[Severity][]string{OK: {"owns no nodes"}}}},
		{"an operator with nodes is flagged", []string{idle, busy}, expect{VerdictFlagged, map[Severity][]string{Flagged: {"still owns 2 node(s)"}}}},
		{"an operator without a record is a no-op", []string{gone}, expect{VerdictNoOp, map[Severity][]string{Warning: {"no registry record"}}}},
		{"an unreadable explorer is a warning", []string{blind}, expect{VerdictReady, map[Severity][]string{Warning: {"explorer down"}}}},
	} {
		p := &config.Proposal{Name: "o", Kind: config.KindRemoveNodeOperators, Body: &kinds.RemoveNodeOperators{Operators: tc.ops}}
		tc.want.assert(t, tc.name, Evaluate(p, live, Options{}))
	}
}

func TestRemoveNodeProviderRules(t *testing.T) {
	np := id("provider")
	for _, tc := range []struct {
		name string
		live ProviderFacts
		want expect
	}{
		{"a known provider without operators is ready", ProviderFacts{Known: true}, expect{VerdictReady, map[Severity][]string{OK: {"no operators left"}}}},
		{"an unknown provider is refused", ProviderFacts{}, expect{VerdictRefused, map[Severity][]string{Refused: {"does not know"}}}},
		{"a provider with operators is flagged", ProviderFacts{Known: true, Operators: []string{id("op")}}, expect{VerdictFlagged, map[Severity][]string{Flagged: {"still has 1 operator(s)"}}}},
	} {
		p := &config.Proposal{Name: "p", Kind: config.KindRemoveNodeProvider, Body: &kinds.RemoveNodeProvider{NodeProviderID: np}}
		tc.want.assert(t, tc.name, Evaluate(p, factsOf(tc.live), Options{}))
	}
}

func TestTheVerdictIsTheWorstCheck(t *testing.T) {
	for _, tc := range []struct {
		sevs []Severity
		noop bool
		want Verdict
	}{
		{[]Severity{OK, Note, Warning}, false, VerdictReady},
		{[]Severity{OK, Warning}, true, VerdictNoOp},
		{[]Severity{Flagged, OK}, true, VerdictFlagged},
		{[]Severity{Flagged, Refused}, false, VerdictRefused},
	} {
		var checks []Check
		for _, s := range tc.sevs {
			checks = append(checks, Check{Severity: s})
		}
		if got := verdict(checks, tc.noop); got != tc.want {
			t.Errorf("%v noop=%v: %s, want %s", tc.sevs, tc.noop, got, tc.want)
		}
	}
}

func TestMessagesNameTheIdsTheConfigNames(t *testing.T) {
	names := map[string]string{n1: "node_01", subnet: "app1", "v9": "current"}
	got := withNames("node "+n1+" is a member of subnet "+subnet+"; (no replica_version_v9 record) version v9, ok", names)
	want := "node node_01 (" + n1 + ") is a member of subnet app1 (" + subnet + "); (no replica_version_v9 record) version current (v9), ok"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if withNames("x "+n1, nil) != "x "+n1 {
		t.Fatal("no names changed the message")
	}
}

func TestANodeNoBlockNamesIsNamedByItsAddRemoveOrNodeLabel(t *testing.T) {
	live := kinds.MembershipFacts{Subnet: subnetWith("v1", n1), Nodes: map[string]NodeFacts{n3: {Registered: true}}, Health: healthy(n1, n3)}
	p := &config.Proposal{Name: "p", Kind: config.KindMembership, Body: &kinds.Membership{
		SubnetID: subnet,
		Add:      []kinds.NodeRef{{ID: n3, Label: "the Geneva spare"}},
		Remove:   []kinds.NodeRef{{ID: n1, Label: "ignored: a block names it"}},
	}}
	names := map[string]string{n1: "node_01"}
	r := Evaluate(p, factsOf(live), Options{Names: names})
	out := dump(r)
	if !strings.Contains(out, "node the Geneva spare ("+n3+")") || !strings.Contains(out, "node node_01 ("+n1+")") {
		t.Fatalf("labels not used as names:\n%s", out)
	}
	if len(names) != 1 {
		t.Fatalf("the caller's names were changed: %v", names)
	}
	r = Evaluate(&config.Proposal{Name: "r", Kind: config.KindRemoveNodes, Body: &kinds.RemoveNodes{Nodes: []kinds.NodeRef{{ID: n3, Label: "spare"}}}}, factsOf(live.Nodes), Options{})
	if out := dump(r); !strings.Contains(out, "node spare ("+n3+")") {
		t.Fatalf("a remove_nodes label with no names at all:\n%s", out)
	}
}

// failing lists the checks of r worse than a warning.
func failing(r Report) []string {
	var out []string
	for _, c := range r.Checks {
		if rank(c.Severity) > rank(Warning) {
			out = append(out, string(c.Severity)+" "+c.Message)
		}
	}
	return out
}

func TestEveryFailingCheckOfAProposalIsReportedNotOnlyTheFirst(t *testing.T) {
	on := true
	sev := subnetWith("v1", n1)
	sev.Features = &nns.SubnetFeatures{SevEnabled: &on}
	elsewhere := map[string]NodeFacts{n4: {Registered: true, MemberOf: other}, id("gone"): {}}
	busy := id("busy")
	for _, tc := range []struct {
		name string
		p    *config.Proposal
		live kinds.Facts
		want []string // one fragment per failing check, in order
	}{
		{"a membership change of a subnet the registry lacks still judges the nodes it adds",
			&config.Proposal{Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n4, id("gone")), Remove: refs(n1)}},
			kinds.MembershipFacts{Nodes: elsewhere},
			[]string{"subnet " + subnet + " is not in the registry", n4 + " is a member of another subnet", id("gone") + " is not registered"}},
		{"a node that sits in another subnet and has no chip is told both",
			&config.Proposal{Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n4)}},
			kinds.MembershipFacts{Subnet: sev, Nodes: elsewhere, Health: healthy(n1, n4)},
			[]string{n4 + " is a member of another subnet", n4 + " has no chip id"}},
		{"a deploy to a subnet the registry lacks still says the version is not elected",
			&config.Proposal{Kind: config.KindDeployGuestOS, Body: &kinds.DeployGuestOS{SubnetID: subnet, ReplicaVersionID: "v3"}},
			kinds.DeployGuestOSFacts{},
			[]string{"subnet " + subnet + " is not in the registry", "version v3 is not elected"}},
		{"an operator whose record could not be read is still asked about its nodes",
			&config.Proposal{Kind: config.KindRemoveNodeOperators, Body: &kinds.RemoveNodeOperators{Operators: []string{busy}}},
			map[string]OperatorFacts{busy: {RegisteredErr: "timeout", Nodes: []string{n1}}},
			[]string{"operator " + busy + " still owns 1 node(s)"}},
		{"a provider governance does not know is still checked for operators",
			&config.Proposal{Kind: config.KindRemoveNodeProvider, Body: &kinds.RemoveNodeProvider{NodeProviderID: id("provider")}},
			ProviderFacts{Operators: []string{id("op")}},
			[]string{"does not know node provider", "still has 1 operator(s)"}},
	} {
		tc.p.Name = "p"
		got := failing(Evaluate(tc.p, factsOf(tc.live), Options{}))
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s: failing checks\n  %s\nwant one each for %q", tc.name, strings.Join(got, "\n  "), tc.want)
		}
	}
}

func TestAFailingCheckNamesTheFileAndLineOfWhatItIsAbout(t *testing.T) {
	at := func(line int) hcl.Range {
		return hcl.Range{Filename: "proposals.hcl", Start: hcl.Pos{Line: line}}
	}
	p := &config.Proposal{Name: "m", Kind: config.KindMembership, Range: at(3),
		Body:   &kinds.Membership{SubnetID: subnet, Add: refs(n3, n4, id("gone"))},
		Places: map[string]hcl.Range{"subnet_id": at(5), subnet: at(5), n3: at(6), n4: at(7), id("gone"): at(8)}}
	live := factsOf(kinds.MembershipFacts{Subnet: subnetWith("v1", n1), Nodes: map[string]NodeFacts{n3: {Registered: true}, n4: {Registered: true, MemberOf: other}, id("gone"): {Err: "timeout"}}, Health: healthy(n1, n3)})
	r := Evaluate(p, live, Options{})
	want := map[string]string{n3: "", n4: "proposals.hcl:7", id("gone"): ""} // ok and a warning name no place
	for _, c := range r.Checks {
		if w, ok := want[c.Subject]; ok && c.At != w {
			t.Errorf("%s check of %s at %q, want %q", c.Severity, c.Subject, c.At, w)
		}
	}
	var b strings.Builder
	r.Render(&b, term.Painter{})
	if !strings.Contains(b.String(), "refused  proposals.hcl:7: node "+n4+" is a member of another subnet") {
		t.Errorf("the rendering does not lead the refused check with its place:\n%s", b.String())
	}
	r = Evaluate(p, factsOf(kinds.MembershipFacts{}), Options{})
	if r.Checks[0].At != "proposals.hcl:5" {
		t.Errorf("the missing subnet's check at %q, want its subnet_id's place", r.Checks[0].At)
	}
	u := &config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Range: at(3),
		Body:   &kinds.UpdateSubnet{SubnetID: subnet, Features: &kinds.Features{SevEnabled: true}},
		Places: map[string]hcl.Range{"features.sev_enabled": at(9)}}
	for _, c := range Evaluate(u, factsOf(kinds.UpdateSubnetFacts{Subnet: subnetWith("v1")}), Options{}).Checks {
		if c.Severity == Refused && c.At != "proposals.hcl:9" {
			t.Errorf("the sev_enabled refusal at %q, want the field's place", c.At)
		}
	}
}

// decodeFuture is ic/nns/testdata/future's full.txt as protoc encodes it: a
// subnet record with query limits (walltime 40) and made-up fields in the
// record (40), its features (12) and its resource_limits (5).
func decodeFuture(t *testing.T) *nns.SubnetRecordPB {
	t.Helper()
	b, err := hex.DecodeString("4a28653364313031623232616533666130326163613733376639666239366363366334636138336163337801ba010418016001920213088080808080201000188090dfc04a20282807c2020178")
	if err != nil {
		t.Fatal(err)
	}
	var rec nns.SubnetRecordPB
	if err := rec.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return &rec
}
