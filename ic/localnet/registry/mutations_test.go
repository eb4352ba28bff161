package registry

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func pid(tag string) principal.Principal { return principal.SelfAuthenticating([]byte(tag)) }

var (
	subnetA  = pid("subnet-a")
	subnetB  = pid("subnet-b")
	subnetC  = pid("subnet-c")
	operator = pid("operator-1")
	idleOp   = pid("operator-idle")
	provider = pid("provider-1")
	n1, n2   = pid("node-1"), pid("node-2")
	n3, n4   = pid("node-3"), pid("node-4")
	free     = pid("node-free")
	sevNode  = pid("node-sev")
	ghost    = pid("node-never-registered")
)

// fixture: subnet A = {n1, n2} running v1 (sev off), subnet B = {n3} (a
// system subnet), subnet C = {sevNode} (SEV on, rented: application on the
// free cost schedule); n4 and free unassigned and without a chip; v1 and v2
// elected, v3 not.
func fixture(t *testing.T) *Registry {
	t.Helper()
	r := New()
	r.AddDataCenter(DataCenter{ID: "zh1", Region: "Europe,CH,Zurich"})
	r.AddNodeOperator(NodeOperator{ID: operator, Provider: provider, DataCenter: "zh1", NodeAllowance: 1})
	r.AddNodeOperator(NodeOperator{ID: idleOp, Provider: provider, DataCenter: "zh1"})
	for _, n := range []principal.Principal{n1, n2, n3, n4, free} {
		if _, err := r.AddNode(Node{ID: n, Operator: operator, IPv6: "::1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.AddNode(Node{ID: sevNode, Operator: operator, IPv6: "::1", ChipID: []byte("chip")}); err != nil {
		t.Fatal(err)
	}
	r.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	r.ElectVersion("v2", nns.ReplicaVersionRecordPB{})
	off := false
	if _, err := r.AddSubnet(Subnet{ID: subnetA, ReplicaVersion: "v1", Members: []principal.Principal{n1, n2}, SevEnabled: &off, MaxCanisters: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddSubnet(Subnet{ID: subnetB, ReplicaVersion: "v1", Members: []principal.Principal{n3}, Type: nns.SubnetTypeSystem}); err != nil {
		t.Fatal(err)
	}
	on := true
	if _, err := r.AddSubnet(Subnet{ID: subnetC, ReplicaVersion: "v1", Members: []principal.Principal{sevNode}, SevEnabled: &on, CostSchedule: nns.CostScheduleFree}); err != nil {
		t.Fatal(err)
	}
	return r
}

// orphan registers a node whose operator has no record (seeding checks
// the operator, so it is written directly).
func orphan(t *testing.T, r *Registry, id principal.Principal) {
	t.Helper()
	rec := nns.NodeRecordPB{NodeOperatorID: pid("operator-without-record").Bytes()}
	r.Apply([]Mutation{{Key: nns.NodeRecordKey(id.String()), Value: rec.Marshal()}})
}

// refusedFirst runs a mutation that must be refused with want and leave the
// registry as it was.
func refusedFirst(t *testing.T, r *Registry, run func() error, want string) {
	t.Helper()
	before := r.Version()
	err := run()
	if err == nil || !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want a refusal containing %q", err, want)
	}
	if r.Version() != before {
		t.Fatal("a refused mutation wrote a new registry version")
	}
}

func members(t *testing.T, r *Registry, s principal.Principal) []principal.Principal {
	t.Helper()
	rec, ok, err := r.Subnet(s)
	if err != nil || !ok {
		t.Fatalf("subnet %s: %v %v", s, ok, err)
	}
	var out []principal.Principal
	for _, m := range rec.Membership {
		out = append(out, principal.MustFromBytes(m))
	}
	return out
}

// Each kind's table holds, beside the plain cases, inputs that fail two
// checks at once: the refusal is the one the canister checks first
// (docs/decisions.md has the order and the upstream files).

func TestChangeSubnetMembershipRefusesInTheCanistersOrder(t *testing.T) {
	ps := func(p ...principal.Principal) []principal.Principal { return p }
	change := func(s principal.Principal, add, remove []principal.Principal) nns.ChangeSubnetMembershipPayload {
		return nns.ChangeSubnetMembershipPayload{SubnetID: s, NodeIDsAdd: add, NodeIDsRemove: remove}
	}
	notFound := "Failed to get subnet record: Subnet record for " + pid("nope").String() + " not found in the registry."
	cases := []struct {
		name    string
		payload nns.ChangeSubnetMembershipPayload
		refused string
		want    []principal.Principal
	}{
		{"adds a free node and removes a member", change(subnetA, ps(free), ps(n2)), "", ps(free, n1)},
		{"the added nodes come first", change(subnetA, ps(free, n4), nil), "", ps(free, n4, n1, n2)},
		{"the same node added twice in a row is added once", change(subnetA, ps(free, free), nil), "", ps(free, n1, n2)},
		{"re-adding the first member collapses into it", change(subnetA, ps(n1), nil), "", ps(n1, n2)},
		{"a node both added and removed ends up out", change(subnetA, ps(n2), ps(n2)), "", ps(n1)},
		{"an unknown subnet is refused", change(pid("nope"), ps(free), nil), notFound, nil},
		{"an unknown subnet is reported before a non-member to remove", change(pid("nope"), nil, ps(n4)), notFound, nil},
		{"removing a non-member is refused", change(subnetA, nil, ps(n4)), "Nodes that should be removed do not belong to the provided subnet.", nil},
		{"a non-member to remove is reported before another subnet's node to add", change(subnetA, ps(n3), ps(n4)), "do not belong to the provided subnet", nil},
		{"adding another subnet's member is refused", change(subnetA, ps(n3), nil), "set_subnet_membership_mutation: Subnet " + subnetB.String() + " already contains some members that are to be added: {" + n3.String() + "}", nil},
		{"another subnet's member is reported before an unregistered node", change(subnetA, ps(ghost, n3), nil), "already contains some members that are to be added", nil},
		{"adding an unregistered node is refused", change(subnetA, ps(ghost), nil), "invariant check failed with message: Node " + ghost.String() + " does not exist in the registry", nil},
		{"an unregistered node is reported before a repeated member", change(subnetA, ps(ghost, n2), nil), "Node " + ghost.String() + " does not exist in the registry", nil},
		{"re-adding a later member repeats it", change(subnetA, ps(n2), nil), "Repeated nodes in subnet " + subnetA.String(), nil},
		{"removing the last member is refused", change(subnetB, nil, ps(n3)), "No node in subnet " + subnetB.String(), nil},
		{"a node without a chip cannot join a SEV subnet", change(subnetC, ps(free), nil), "invariant check failed with message: Subnet " + subnetC.String() + " is SEV-enabled, but the following nodes are missing a chip ID: [" + free.String() + "]", nil},
		{"a repeated member is reported before a missing chip", change(subnetC, ps(free, sevNode, free), nil), "Repeated nodes in subnet " + subnetC.String(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			if c.refused != "" {
				refusedFirst(t, r, func() error { return r.ChangeSubnetMembership(c.payload) }, c.refused)
				return
			}
			before := r.Version()
			if err := r.ChangeSubnetMembership(c.payload); err != nil {
				t.Fatal(err)
			}
			if r.Version() != before+1 {
				t.Fatalf("version %d -> %d, want one bump", before, r.Version())
			}
			if got := members(t, r, c.payload.SubnetID); !slices.Equal(got, c.want) {
				t.Fatalf("members = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDeployGuestosRefusesInTheCanistersOrder(t *testing.T) {
	// chipless seeds a SEV subnet one of whose nodes has no chip: a state
	// the canister's invariants never let in, as a fleet file may describe.
	broken := pid("subnet-broken")
	chipless := func(t *testing.T, r *Registry) {
		on := true
		if _, err := r.AddSubnet(Subnet{ID: broken, ReplicaVersion: "v1", Members: []principal.Principal{n4}, SevEnabled: &on}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, version, refused string
		subnet                 principal.Principal
		prep                   func(*testing.T, *Registry)
	}{
		{"an elected version deploys", "v2", "", subnetA, nil},
		{"an unelected version is refused", "v3", "Replica version 'v3' is NOT elected. The elected versions are: [v1, v2].", subnetA, nil},
		{"an unknown subnet is refused", "v2", "Error while fetching the subnet record", pid("nope"), nil},
		{"an unelected version is reported before a missing subnet", "v3", "NOT elected", pid("nope"), nil},
		{"a subnet that breaks an invariant is refused", "v2", "is SEV-enabled, but the following nodes are missing a chip ID: [" + n4.String() + "]", broken, chipless},
		{"an unelected version is reported before a broken invariant", "v3", "NOT elected", broken, chipless},
		{"another subnet's broken invariant does not stop a deploy", "v2", "", subnetA, chipless},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			if c.prep != nil {
				c.prep(t, r)
			}
			run := func() error {
				return r.DeployGuestosToAllSubnetNodes(nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: c.subnet, ReplicaVersionID: c.version})
			}
			if c.refused != "" {
				refusedFirst(t, r, run, c.refused)
				return
			}
			if err := run(); err != nil {
				t.Fatal(err)
			}
			rec, _, _ := r.Subnet(c.subnet)
			if rec.ReplicaVersionID != c.version {
				t.Fatalf("version = %q", rec.ReplicaVersionID)
			}
		})
	}
	t.Run("an unelected version can no longer be deployed", func(t *testing.T) {
		r := fixture(t)
		if err := r.UnelectVersion("v2"); err != nil {
			t.Fatal(err)
		}
		if r.Elected("v2") {
			t.Fatal("v2 still elected")
		}
		if err := r.DeployGuestosToAllSubnetNodes(nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: subnetA, ReplicaVersionID: "v2"}); err == nil {
			t.Fatal("deployed an unelected version")
		}
		if err := r.UnelectVersion("v1"); err == nil {
			t.Fatal("unelected a version subnets run")
		}
	})
}

func TestUpdateSubnetRefusesInTheCanistersOrder(t *testing.T) {
	on, off := true, false
	u64 := func(v uint64) *uint64 { return &v }
	app, _ := nns.SubnetTypeNamed("application")
	sys, _ := nns.SubnetTypeNamed("system")
	keys := []string{"ssh-ed25519 AAA"}
	tooMany := make([]string, 51)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("ssh-ed25519 K%d", i)
	}
	admins := []principal.Principal{pid("admin")}
	sevOn := "Proposal attempts to change sev_enabled for Subnet '" + subnetA.String() + "' from false to true, but sev_enabled can only be set during subnet creation."
	cases := []struct {
		name    string
		payload nns.UpdateSubnetPayload
		refused string
		check   func(t *testing.T, rec nns.SubnetRecordPB)
	}{
		{"set fields change, omitted ones stay", nns.UpdateSubnetPayload{SubnetID: subnetA, IsHalted: &on, MaxNumberOfCanisters: u64(500), SSHReadonlyAccess: &keys}, "",
			func(t *testing.T, rec nns.SubnetRecordPB) {
				if !rec.IsHalted || rec.MaxNumberOfCanisters != 500 || !slices.Equal(rec.SSHReadonlyAccess, keys) {
					t.Fatalf("not applied: %+v", rec)
				}
				if rec.ReplicaVersionID != "v1" || rec.UnitDelayMillis != 1000 || len(rec.Membership) != 2 {
					t.Fatalf("an omitted field changed: %+v", rec)
				}
			}},
		{"restating sev_enabled is accepted", nns.UpdateSubnetPayload{SubnetID: subnetA, Features: &nns.SubnetFeatures{HTTPRequests: true, SevEnabled: &off}}, "",
			func(t *testing.T, rec nns.SubnetRecordPB) {
				if !rec.Features.HTTPRequests {
					t.Fatal("features not replaced")
				}
			}},
		{"features without sev_enabled keep a subnet without SEV as it is", nns.UpdateSubnetPayload{SubnetID: subnetA, Features: &nns.SubnetFeatures{HTTPRequests: true}}, "", nil},
		{"admins on a rented subnet are accepted", nns.UpdateSubnetPayload{SubnetID: subnetC, SubnetAdmins: &admins}, "", nil},
		{"restating subnet_type is accepted", nns.UpdateSubnetPayload{SubnetID: subnetA, SubnetType: &app}, "", nil},
		{"an unknown subnet is refused", nns.UpdateSubnetPayload{SubnetID: pid("nope"), IsHalted: &on}, "Subnet record for " + pid("nope").String() + " not found in the registry", nil},
		{"an unknown subnet is reported before a change of sev_enabled", nns.UpdateSubnetPayload{SubnetID: pid("nope"), Features: &nns.SubnetFeatures{SevEnabled: &on}}, "not found in the registry", nil},
		{"turning SEV on is refused", nns.UpdateSubnetPayload{SubnetID: subnetA, Features: &nns.SubnetFeatures{SevEnabled: &on}}, sevOn, nil},
		{"features without sev_enabled turn a SEV subnet's SEV off, which is refused", nns.UpdateSubnetPayload{SubnetID: subnetC, Features: &nns.SubnetFeatures{HTTPRequests: true}}, "from true to false", nil},
		{"a change of sev_enabled is reported before a change of subnet_type", nns.UpdateSubnetPayload{SubnetID: subnetA, Features: &nns.SubnetFeatures{SevEnabled: &on}, SubnetType: &sys}, sevOn, nil},
		{"changing subnet_type is refused", nns.UpdateSubnetPayload{SubnetID: subnetA, SubnetType: &sys}, "assertion `left == right` failed: the subnet_type of subnet " + subnetA.String() + " cannot be changed (EXC-408): left: 1, right: 2", nil},
		{"a change of subnet_type is reported before an SSH list too long", nns.UpdateSubnetPayload{SubnetID: subnetA, SubnetType: &sys, SSHBackupAccess: &tooMany}, "subnet_type", nil},
		{"an SSH list of more than 50 keys is refused", nns.UpdateSubnetPayload{SubnetID: subnetA, SSHBackupAccess: &tooMany}, "invariant check failed with message: Mutation would have resulted in an SSH key access list that is too long, the maximum allowable length is 50, and the `readonly` and `backup` lists had 0 and 51 keys, respectively", nil},
		{"an SSH list too long is reported before admins on a subnet that is not rented", nns.UpdateSubnetPayload{SubnetID: subnetA, SSHReadonlyAccess: &tooMany, SubnetAdmins: &admins}, "SSH key access list that is too long", nil},
		{"admins on a subnet that is not rented are refused", nns.UpdateSubnetPayload{SubnetID: subnetA, SubnetAdmins: &admins}, "invariant check failed with message: Subnet " + subnetA.String() + " is not a rented or cloud engine subnet but has a non-empty subnet admins list", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			if c.refused != "" {
				refusedFirst(t, r, func() error { return r.UpdateSubnet(c.payload) }, c.refused)
				return
			}
			if err := r.UpdateSubnet(c.payload); err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				rec, _, _ := r.Subnet(c.payload.SubnetID)
				c.check(t, rec)
			}
		})
	}
}

func TestRemoveNodesRefusesInTheCanistersOrder(t *testing.T) {
	stray := pid("node-stray") // registered, in no subnet, its operator without a record
	inSubnet := "do_remove_nodes: Cannot remove a node that is a member of a subnet. This node is a member of Subnet: " + nns.SubnetRecordKey(subnetA.String())
	noOperator := "do_remove_nodes: Aborting node removal: Node Operator Id " + nns.NodeOperatorRecordKey(pid("operator-without-record").String()) + " not found in the registry."
	// The canister goes through the nodes sorted, so of a member and a
	// stray the one that sorts first is reported.
	first := inSubnet
	if bytes.Compare(stray.Bytes(), n1.Bytes()) < 0 {
		first = noOperator
	}
	cases := []struct {
		name    string
		nodes   []principal.Principal
		refused string
		removed []principal.Principal
	}{
		{"a free node is deregistered", []principal.Principal{free, free}, "", []principal.Principal{free}},
		{"an unregistered node is skipped and the others are removed", []principal.Principal{ghost, free}, "", []principal.Principal{free}},
		{"a subnet member is refused", []principal.Principal{free, n1}, inSubnet, nil},
		{"an unregistered node is skipped before a subnet member is refused", []principal.Principal{ghost, n1}, inSubnet, nil},
		{"a node whose operator has no record is refused", []principal.Principal{stray}, noOperator, nil},
		{"of a member and a node without its operator, the one that sorts first is reported", []principal.Principal{stray, n1}, first, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			orphan(t, r, stray)
			if c.refused != "" {
				refusedFirst(t, r, func() error { return r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: c.nodes}) }, c.refused)
				if _, ok, _ := r.Node(free); !ok {
					t.Fatal("a refused removal removed a node")
				}
				return
			}
			if err := r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: c.nodes}); err != nil {
				t.Fatal(err)
			}
			for _, n := range c.removed {
				if _, ok, _ := r.Node(n); ok {
					t.Fatalf("node %s still registered", n)
				}
			}
			op, _, _ := r.NodeOperator(operator)
			if op.NodeAllowance != 1+uint64(len(c.removed)) {
				t.Fatalf("allowance = %d, want one back per removed node", op.NodeAllowance)
			}
		})
	}
	t.Run("a removal is a deletion in the node's history", func(t *testing.T) {
		r := fixture(t)
		if err := r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: []principal.Principal{free}}); err != nil {
			t.Fatal(err)
		}
		h := r.History(nns.NodeRecordKey(free.String()))
		if len(h) != 2 || h[1].Value != nil {
			t.Fatalf("history = %+v, want a write then a deletion", h)
		}
	})
}

func TestRemoveNodeOperatorsRefusesInTheCanistersOrder(t *testing.T) {
	byPrincipal := func(ops ...principal.Principal) *nns.NodeOperatorPrincipals {
		return &nns.NodeOperatorPrincipals{Principals: ops}
	}
	cases := []struct {
		name    string
		payload nns.RemoveNodeOperatorsPayload
		refused string
		removed []principal.Principal
		kept    []principal.Principal
	}{
		{"an idle operator is removed, one with nodes and an unknown one are skipped",
			nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{}, NodeOperatorPrincipalsToRemove: byPrincipal(operator, idleOp, pid("unknown-op"))}, "",
			[]principal.Principal{idleOp}, []principal.Principal{operator}},
		{"the older byte-string field alone is read, ids that do not decode dropped",
			nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{idleOp.Bytes(), make([]byte, 40)}}, "",
			[]principal.Principal{idleOp}, []principal.Principal{operator}},
		{"naming operators in both fields is refused before any operator is looked at",
			nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{idleOp.Bytes()}, NodeOperatorPrincipalsToRemove: byPrincipal(operator, pid("unknown-op"))},
			"Cannot specify both node_operators_to_remove and node_operator_principals_to_remove", nil, []principal.Principal{operator, idleOp}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			if c.refused != "" {
				refusedFirst(t, r, func() error { return r.RemoveNodeOperators(c.payload) }, c.refused)
			} else if err := r.RemoveNodeOperators(c.payload); err != nil {
				t.Fatal(err)
			}
			for _, op := range c.removed {
				if _, ok, _ := r.NodeOperator(op); ok {
					t.Errorf("operator %s was not removed", op)
				}
			}
			for _, op := range c.kept {
				if _, ok, _ := r.NodeOperator(op); !ok {
					t.Errorf("operator %s was removed", op)
				}
			}
		})
	}
}

func TestOperatorsOfProviderCarriesTheirDataCenters(t *testing.T) {
	r := fixture(t)
	ops, dcs, err := r.OperatorsOfProvider(provider)
	if err != nil || len(ops) != 2 || dcs[0].ID != "zh1" || dcs[0].Region != "Europe,CH,Zurich" {
		t.Fatalf("ops=%d dcs=%+v err=%v", len(ops), dcs, err)
	}
	if ops, _, _ := r.OperatorsOfProvider(pid("other")); len(ops) != 0 {
		t.Fatal("another provider's operators were returned")
	}
}

func TestRecordsAreReadByKeyAndVersion(t *testing.T) {
	r := fixture(t)
	key := nns.SubnetRecordKey(subnetA.String())
	_, v1, ok := r.Get(key)
	if !ok {
		t.Fatal("no subnet record")
	}
	if err := r.DeployGuestosToAllSubnetNodes(nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: subnetA, ReplicaVersionID: "v2"}); err != nil {
		t.Fatal(err)
	}
	old, _, _ := r.GetAt(key, v1)
	var rec nns.SubnetRecordPB
	if err := rec.Unmarshal(old); err != nil || rec.ReplicaVersionID != "v1" {
		t.Fatalf("record at version %d = %q, want v1", v1, rec.ReplicaVersionID)
	}
	if _, _, ok := r.GetAt(key, 0); ok {
		t.Fatal("record visible before it was written")
	}
}
