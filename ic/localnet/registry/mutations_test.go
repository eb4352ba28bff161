package registry

import (
	"errors"
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
	operator = pid("operator-1")
	idleOp   = pid("operator-idle")
	provider = pid("provider-1")
	n1, n2   = pid("node-1"), pid("node-2")
	n3, n4   = pid("node-3"), pid("node-4")
	free     = pid("node-free")
	ghost    = pid("node-never-registered")
)

// fixture: subnet A = {n1, n2} running v1 (sev off), subnet B = {n3},
// n4 and free unassigned; v1 and v2 elected, v3 not.
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
	r.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	r.ElectVersion("v2", nns.ReplicaVersionRecordPB{})
	off := false
	if _, err := r.AddSubnet(Subnet{ID: subnetA, ReplicaVersion: "v1", Members: []principal.Principal{n1, n2}, SevEnabled: &off, MaxCanisters: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddSubnet(Subnet{ID: subnetB, ReplicaVersion: "v1", Members: []principal.Principal{n3}, Type: nns.SubnetTypeSystem}); err != nil {
		t.Fatal(err)
	}
	return r
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

func TestChangeSubnetMembershipRules(t *testing.T) {
	ps := func(p ...principal.Principal) []principal.Principal { return p }
	cases := []struct {
		name    string
		payload nns.ChangeSubnetMembershipPayload
		refused string
		want    []principal.Principal
	}{
		{"adds a free node and removes a member", nns.ChangeSubnetMembershipPayload{SubnetID: subnetA, NodeIDsAdd: ps(free), NodeIDsRemove: ps(n2)}, "", ps(free, n1)},
		{"an unknown subnet is refused", nns.ChangeSubnetMembershipPayload{SubnetID: pid("nope"), NodeIDsAdd: ps(free)}, "not found in the registry", nil},
		{"adding an unregistered node is refused", nns.ChangeSubnetMembershipPayload{SubnetID: subnetA, NodeIDsAdd: ps(ghost)}, "does not exist", nil},
		{"adding another subnet's member is refused", nns.ChangeSubnetMembershipPayload{SubnetID: subnetA, NodeIDsAdd: ps(n3)}, "already a member of subnet", nil},
		{"adding a current member is refused", nns.ChangeSubnetMembershipPayload{SubnetID: subnetA, NodeIDsAdd: ps(n1)}, "already a member", nil},
		{"removing a non-member is refused", nns.ChangeSubnetMembershipPayload{SubnetID: subnetA, NodeIDsRemove: ps(n4)}, "do not belong to the provided subnet", nil},
		{"adding the same node twice is refused", nns.ChangeSubnetMembershipPayload{SubnetID: subnetA, NodeIDsAdd: ps(free, free)}, "twice", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			before := r.Version()
			err := r.ChangeSubnetMembership(c.payload)
			if c.refused != "" {
				if err == nil || !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("err = %v, want refusal containing %q", err, c.refused)
				}
				if r.Version() != before {
					t.Fatal("a refused mutation bumped the registry version")
				}
				return
			}
			if err != nil {
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

func TestDeployGuestosNeedsAnElectedVersion(t *testing.T) {
	cases := []struct {
		name, version, refused string
		subnet                 principal.Principal
	}{
		{"an elected version deploys", "v2", "", subnetA},
		{"an unelected version is refused", "v3", "Replica version 'v3' is NOT blessed. The blessed versions are: [v1, v2].", subnetA},
		{"an unknown subnet is refused", "v2", "not found in the registry", pid("nope")},
		{"an unelected version is reported before a missing subnet", "v3", "NOT blessed", pid("nope")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			err := r.DeployGuestosToAllSubnetNodes(nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: c.subnet, ReplicaVersionID: c.version})
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("err = %v, want %q", err, c.refused)
				}
				return
			}
			if err != nil {
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

func TestUpdateSubnetRules(t *testing.T) {
	on, off := true, false
	u64 := func(v uint64) *uint64 { return &v }
	app, _ := nns.SubnetTypeNamed("application")
	sys, _ := nns.SubnetTypeNamed("system")
	keys := []string{"ssh-ed25519 AAA"}
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
		{"changing sev_enabled is refused", nns.UpdateSubnetPayload{SubnetID: subnetA, Features: &nns.SubnetFeatures{SevEnabled: &on}}, "sev_enabled", nil},
		{"restating subnet_type is accepted", nns.UpdateSubnetPayload{SubnetID: subnetA, SubnetType: &app}, "", nil},
		{"changing subnet_type is refused", nns.UpdateSubnetPayload{SubnetID: subnetA, SubnetType: &sys}, "subnet_type", nil},
		{"an unknown subnet is refused", nns.UpdateSubnetPayload{SubnetID: pid("nope"), IsHalted: &on}, "not found in the registry", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			before, _, _ := r.Subnet(subnetA)
			err := r.UpdateSubnet(c.payload)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("err = %v, want %q", err, c.refused)
				}
				after, _, _ := r.Subnet(subnetA)
				if string(after.Marshal()) != string(before.Marshal()) {
					t.Fatal("a refused update changed the record")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				rec, _, _ := r.Subnet(c.payload.SubnetID)
				c.check(t, rec)
			}
		})
	}
}

func TestRemoveNodesRules(t *testing.T) {
	t.Run("a free node is deregistered and its operator regains allowance", func(t *testing.T) {
		r := fixture(t)
		if err := r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: []principal.Principal{free, free}}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := r.Node(free); ok {
			t.Fatal("node still registered")
		}
		h := r.History(nns.NodeRecordKey(free.String()))
		if len(h) != 2 || h[1].Value != nil {
			t.Fatalf("history = %+v, want a write then a deletion", h)
		}
		op, _, _ := r.NodeOperator(operator)
		if op.NodeAllowance != 2 {
			t.Fatalf("allowance = %d, want 2", op.NodeAllowance)
		}
	})
	t.Run("an unregistered node aborts the whole removal", func(t *testing.T) {
		r := fixture(t)
		err := r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: []principal.Principal{free, ghost}})
		if err == nil || !strings.Contains(err.Error(), "Aborting node removal: Node Id "+ghost.String()+" not found") {
			t.Fatalf("err = %v", err)
		}
		if _, ok, _ := r.Node(free); !ok {
			t.Fatal("the free node was removed by an aborted proposal")
		}
	})
	t.Run("a subnet member is refused and nothing is removed", func(t *testing.T) {
		r := fixture(t)
		err := r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: []principal.Principal{free, n1}})
		if err == nil || !strings.Contains(err.Error(), "is a member of a subnet") {
			t.Fatalf("err = %v", err)
		}
		if _, ok, _ := r.Node(free); !ok {
			t.Fatal("the free node was removed by a refused proposal")
		}
	})
}

func TestRemoveNodeOperatorsSilentlySkipsAnOperatorWithNodes(t *testing.T) {
	r := fixture(t)
	err := r.RemoveNodeOperators(nns.RemoveNodeOperatorsPayload{
		NodeOperatorsToRemove:          [][]byte{operator.Bytes()},
		NodeOperatorPrincipalsToRemove: &nns.NodeOperatorPrincipals{Principals: []principal.Principal{idleOp, pid("unknown-op")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.NodeOperator(operator); !ok {
		t.Fatal("an operator that owns nodes was removed")
	}
	if _, ok, _ := r.NodeOperator(idleOp); ok {
		t.Fatal("the idle operator was not removed")
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
