package proposal

import (
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
)

// The hashes alp recorded for these declarations before update_subnet's
// resource_limits grew the query limits: the release before 1b4df7c
// built them (halt-app1's is also that release's halt-app1.golden).
const (
	formerHaltApp1 = "c021fb4e966e5a3c7443862471aef14416f5d0974be225e94207313e6d376017"
	formerLimits   = "7545a2acd58afcb4c54e184da2e83a11e4e2f99d108e60822021ecabf129f920"
)

func limitsDecl() *config.Proposal {
	halt := true
	return &config.Proposal{Name: "l", Kind: config.KindUpdateSubnet, Title: "limits", Body: &kinds.UpdateSubnet{
		SubnetID: "67htk-vfkxp-gn33q-baibq", IsHalted: &halt,
		ResourceLimits: &kinds.ResourceLimits{MaximumStateSize: 1 << 30, MaximumStateDelta: 1 << 20},
	}}
}

func TestARecordOfAnEarlierReleasesEncodingIsInSync(t *testing.T) {
	halt := build(t, loadFixture(t), "halt-app1")
	limits, err := Build(limitsDecl())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p      *Proposal
		former string
	}{{halt, formerHaltApp1}, {limits, formerLimits}} {
		if tc.p.PayloadSHA256 == tc.former {
			t.Fatalf("%s: the payload still hashes as the earlier release did; the test proves nothing", tc.p.Name)
		}
		rec := &state.Proposal{Kind: "update_subnet", ProposalID: 7, PayloadSHA256: tc.former, Status: state.StatusOpen}
		if sync, note := Compare(tc.p, rec); sync != InSync {
			t.Errorf("%s: a record of the earlier encoding is %s (%s), want in sync", tc.p.Name, sync, note)
		}
		// the same record of another declaration is still drift
		rec.PayloadSHA256 = formerHaltApp1
		if tc.former == formerHaltApp1 {
			rec.PayloadSHA256 = formerLimits
		}
		if sync, _ := Compare(tc.p, rec); sync != Drift {
			t.Errorf("%s: a record of another declaration is %s, want drift", tc.p.Name, sync)
		}
	}
}

func TestAnUpdateSubnetIsComparedByWhatItsDeclarationAloneHashesTo(t *testing.T) {
	q, w := uint64(5_000_000_000), uint64(60)
	live := &nns.SubnetRecordPB{ResourceLimits: &nns.ResourceLimitsRecord{MaximumQueryInstructions: &q, MaximumQueryWalltimeSeconds: &w}}
	sent, err := BuildLive(limitsDecl(), Live{Subnet: live})
	if err != nil {
		t.Fatal(err)
	}
	offline, err := Build(limitsDecl())
	if err != nil {
		t.Fatal(err)
	}
	if sent.PayloadSHA256 == offline.PayloadSHA256 {
		t.Fatal("the inherited query limits changed nothing in the payload; the test proves nothing")
	}
	if sent.DeclaredSHA256 != offline.PayloadSHA256 || offline.DeclaredSHA256 != offline.PayloadSHA256 {
		t.Fatalf("declared hashes: live build %s, offline build %s, offline payload %s", sent.DeclaredSHA256, offline.DeclaredSHA256, offline.PayloadSHA256)
	}
	// what apply records, compared offline (alp list) and live again
	rec := &state.Proposal{Kind: "update_subnet", ProposalID: 9, PayloadSHA256: sent.PayloadSHA256, DeclaredSHA256: sent.DeclaredSHA256}
	for _, p := range []*Proposal{offline, sent} {
		if sync, note := Compare(p, rec); sync != InSync {
			t.Errorf("a record of the payload sent is %s (%s) against a build with live=%v, want in sync", sync, note, p == sent)
		}
	}
	changed := limitsDecl()
	changed.Body.(*kinds.UpdateSubnet).ResourceLimits.MaximumStateDelta++
	p, err := Build(changed)
	if err != nil {
		t.Fatal(err)
	}
	if sync, _ := Compare(p, rec); sync != Drift {
		t.Errorf("a changed declaration is %s, want drift", sync)
	}
}
