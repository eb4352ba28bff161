package registry

import (
	"testing"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// SubnetOf answers from an index built per registry version: it must
// follow every write, whichever way it is made.
func TestSubnetOfFollowsEveryVersion(t *testing.T) {
	r := fixture(t)
	want := func(node principal.Principal, subnet principal.Principal, in bool) {
		t.Helper()
		got, ok, err := r.SubnetOf(node)
		if err != nil || ok != in || (in && got != subnet) {
			t.Fatalf("SubnetOf(%s) at version %d = %s, %v, %v; want %s, %v", node, r.Version(), got, ok, err, subnet, in)
		}
	}
	want(n1, subnetA, true)
	want(n3, subnetB, true)
	want(n4, principal.Principal{}, false)

	// a membership change: n4 joins A, n1 leaves it
	if err := r.ChangeSubnetMembership(nns.ChangeSubnetMembershipPayload{SubnetID: subnetA,
		NodeIDsAdd: []principal.Principal{n4}, NodeIDsRemove: []principal.Principal{n1}}); err != nil {
		t.Fatal(err)
	}
	want(n4, subnetA, true)
	want(n1, principal.Principal{}, false)
	want(n2, subnetA, true)

	// a record written directly (no invariant check): n1 is B's member now
	rec, ok, err := r.Subnet(subnetB)
	if err != nil || !ok {
		t.Fatalf("subnet B: %v, %v", ok, err)
	}
	rec.Membership = append(rec.Membership, n1.Bytes())
	r.Apply([]Mutation{{Key: nns.SubnetRecordKey(subnetB.String()), Value: rec.Marshal()}})
	want(n1, subnetB, true)

	// a subnet record deleted: its members are in no subnet
	r.Apply([]Mutation{{Key: nns.SubnetRecordKey(subnetB.String()), Delete: true}})
	want(n1, principal.Principal{}, false)
	want(n3, principal.Principal{}, false)
}
