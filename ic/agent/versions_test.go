package agent

import (
	"errors"
	"testing"

	"alpnib.dev/ic/certificate"
)

// Each test below turns endpoints of the fake replica off (it answers 404
// there) and checks what the agent used and verified.

func TestTheAgentUsesV4CallV3QueryAndV3ReadStateByDefault(t *testing.T) {
	f := newFakeReplica(t)
	a := newAgent(t, f)
	if got, err := a.Call(ctx(t), inRange, "echo", []byte("hi")); err != nil || string(got) != "hi" {
		t.Fatalf("call = %q, %v", got, err)
	}
	if got, err := a.Query(ctx(t), inRange, "echo", []byte("q")); err != nil || string(got) != "q" {
		t.Fatalf("query = %q, %v", got, err)
	}
	if _, err := a.ReadSubnetState(ctx(t), f.subnetID, [][][]byte{certificate.Path("time")}); err != nil {
		t.Fatalf("subnet read_state: %v", err)
	}
	for _, e := range []string{"v4 call", "v3 query", "v3 read_state", "v3 subnet read_state"} {
		if f.hitsOf(e) == 0 {
			t.Errorf("%s was never used", e)
		}
	}
	for _, e := range []string{"v3 call", "v2 call", "v2 query", "v2 read_state", "v2 subnet read_state"} {
		if n := f.hitsOf(e); n != 0 {
			t.Errorf("the deprecated %s was used %d times", e, n)
		}
	}
}

func TestEveryEndpointVersionIsAnsweredAndVerified(t *testing.T) {
	// slow is answered 202 and polled, so a call uses read_state too
	call := func(a *Agent, _ *fakeReplica) error {
		got, err := a.Call(ctx(t), inRange, "slow", []byte("x"))
		if err == nil && string(got) != "x" {
			t.Errorf("call = %q", got)
		}
		return err
	}
	query := func(a *Agent, _ *fakeReplica) error {
		got, err := a.Query(ctx(t), inRange, "echo", []byte("q"))
		if err == nil && string(got) != "q" {
			t.Errorf("query = %q", got)
		}
		return err
	}
	subnetRead := func(a *Agent, f *fakeReplica) error {
		_, err := a.ReadSubnetState(ctx(t), f.subnetID, [][][]byte{certificate.Path("time")})
		return err
	}
	for _, c := range []struct {
		name string
		off  []string
		use  func(*Agent, *fakeReplica) error
	}{
		{"v4 call", nil, call},
		{"v3 call", []string{"v4 call"}, call},
		{"v2 call", []string{"v4 call", "v3 call"}, call},
		{"v3 read_state", nil, call},
		{"v2 read_state", []string{"v3 read_state"}, call},
		{"v3 query", nil, query},
		{"v2 query", []string{"v3 query"}, query},
		{"v3 subnet read_state", nil, subnetRead},
		{"v2 subnet read_state", []string{"v3 subnet read_state"}, subnetRead},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeReplica(t)
			for _, o := range c.off {
				f.off[o] = true
			}
			if err := c.use(newAgent(t, f), f); err != nil {
				t.Fatal(err)
			}
			if f.hitsOf(c.name) == 0 {
				t.Errorf("%s was not used", c.name)
			}
		})
	}
}

func TestTheFallbackIsTakenOncePerHost(t *testing.T) {
	f := newFakeReplica(t)
	f.off["v4 call"], f.off["v3 read_state"] = true, true
	a := newAgent(t, f)
	for range 3 {
		if _, err := a.Call(ctx(t), inRange, "slow", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.hitsOf("v4 call"); n != 1 {
		t.Errorf("v4 call was tried %d times, want once", n)
	}
	if n := f.hitsOf("v3 read_state"); n != 1 {
		t.Errorf("v3 read_state was tried %d times, want once", n)
	}
	if n := f.hitsOf("v3 call"); n != 3 {
		t.Errorf("v3 call answered %d calls, want 3", n)
	}
	if got := a.EndpointVersions(); got["call"] != "v3" || got["read_state"] != "v2" || got["query"] != "v3" {
		t.Errorf("versions in use = %v", got)
	}
	// another agent for another host starts from the current versions again
	g := newFakeReplica(t)
	if _, err := newAgent(t, g).Call(ctx(t), inRange, "echo", nil); err != nil || g.hitsOf("v4 call") != 1 {
		t.Errorf("a fresh host: err = %v, v4 calls = %d", err, g.hitsOf("v4 call"))
	}
}

func TestOnlyA404Or405StepsDownAVersion(t *testing.T) {
	f := newFakeReplica(t)
	f.failReads = 1 // one 503 from read_state: retried at the same version
	a := newAgent(t, f)
	if _, err := a.Call(ctx(t), inRange, "slow", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := f.hitsOf("v2 read_state"); n != 0 {
		t.Errorf("a 503 moved read_state to v2 (%d requests)", n)
	}
}

func TestAV4AnswerWhoseDelegationRangesMissTheCanisterIsRefused(t *testing.T) {
	f := newFakeReplica(t)
	if _, err := newAgent(t, f).Call(ctx(t), outOfRange, "echo", nil); !errors.Is(err, certificate.ErrNotAuthorized) {
		t.Fatalf("err = %v, want ErrNotAuthorized", err)
	}
	if f.hitsOf("v4 call") != 1 {
		t.Errorf("the refusal did not come from the v4 call")
	}
}

func TestAV4AnswerWithAFlatDelegationIsRefused(t *testing.T) {
	// a host that answers v4 with the v3 layout has not certified the
	// ranges where the v4 spec says they are
	f := newFakeReplica(t)
	f.delegTree = f.deleg
	if _, err := newAgent(t, f).Call(ctx(t), inRange, "echo", nil); !errors.Is(err, certificate.ErrNotAuthorized) {
		t.Fatalf("err = %v, want ErrNotAuthorized", err)
	}
}
