package localnet

import (
	"net/http"
	"testing"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/principal"
)

func TestARequestStatusReadThroughAnotherCanisterOrASubnetIsRefused(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	req := agent.Request{Type: agent.TypeCall, Sender: n.me.Sender(), IngressExpiry: c.expiry(), CanisterID: GovernanceID,
		MethodName: "list_node_providers", Arg: mustMarshal(t, struct{}{})}
	rid := req.ID()
	if code, body := c.send("v4", "call", GovernanceID, req); code != http.StatusOK {
		t.Fatalf("v4 call: %d %s", code, body)
	}
	status := agent.Request{Type: agent.TypeReadState, Paths: [][][]byte{{[]byte("request_status"), rid[:]}}}
	for _, v := range []string{"v2", "v3"} {
		if code, body := c.send(v, "read_state", RegistryID, status); code != http.StatusForbidden {
			t.Errorf("%s read_state of governance's request through the registry: %d %s, want 403", v, code, body)
		}
		if code, body := c.send(v, "read_state", GovernanceID, status); code != http.StatusOK {
			t.Errorf("%s read_state through the call's own canister: %d %s", v, code, body)
		}
		// a canister call has no effective subnet id, so no subnet endpoint may read it
		root := principal.SelfAuthenticating(c.verifier.RootKey().DER())
		if code, body := c.sendTo("/api/"+v+"/subnet/"+root.String()+"/read_state", status); code != http.StatusForbidden {
			t.Errorf("%s subnet read_state of a canister call's status: %d %s, want 403", v, code, body)
		}
	}
}

func TestAV3CanisterReadStateRevealsOnlyWhatTheSpecLetsIt(t *testing.T) {
	s, err := New(Options{Subnets: 2})
	if err != nil {
		t.Fatal(err)
	}
	root, app := s.subnets[0], s.subnets[1]
	rs := readScope{v3: true, by: root}
	if _, err := s.paths(rs, [][][]byte{{[]byte("canister_ranges"), app.id.Bytes()}}); err == nil {
		t.Error("/canister_ranges was served at a canister endpoint")
	}
	if _, err := s.paths(readScope{v3: true, subnet: true, by: app}, [][][]byte{{[]byte("canister_ranges"), app.id.Bytes()}}); err != nil {
		t.Errorf("/canister_ranges at the subnet endpoint: %v", err)
	}
	if _, err := s.paths(rs, [][][]byte{{[]byte("subnet"), app.id.Bytes(), []byte("canister_ranges")}}); err == nil {
		t.Error("a non-root subnet's flat ranges were served at v3")
	}
	paths, err := s.paths(rs, [][][]byte{certificate.Path("subnet")})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.certify(root, nil, paths)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certificate.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path [][]byte
		want certificate.Status
	}{
		{[][]byte{[]byte("subnet"), root.id.Bytes(), []byte("canister_ranges")}, certificate.Found},
		{[][]byte{[]byte("subnet"), app.id.Bytes(), []byte("canister_ranges")}, certificate.Unknown},
		{[][]byte{[]byte("subnet"), app.id.Bytes(), []byte("public_key")}, certificate.Found},
		{[][]byte{[]byte("subnet"), root.id.Bytes(), []byte("node"), root.node.Sender().Bytes(), []byte("public_key")}, certificate.Found},
		{[][]byte{[]byte("subnet"), app.id.Bytes(), []byte("node"), app.node.Sender().Bytes(), []byte("public_key")}, certificate.Unknown},
	} {
		if _, st := cert.Tree.Lookup(c.path...); st != c.want {
			t.Errorf("%q is %s, want %s", c.path, st, c.want)
		}
	}
}

func TestTheSubnetQueryServesOnlyListCanistersAndRefusesIt(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	sid := principal.SelfAuthenticating(c.verifier.RootKey().DER())
	post := func(canister principal.Principal, method string) (int, []byte) {
		return c.sendTo("/api/v3/subnet/"+sid.String()+"/query", agent.Request{Type: agent.TypeQuery, CanisterID: canister, MethodName: method, Arg: mustMarshal(t, struct{}{})})
	}
	if code, body := post(GovernanceID, "list_node_providers"); code != http.StatusBadRequest {
		t.Errorf("a canister's query at the subnet endpoint: %d %s", code, body)
	}
	code, body := post(principal.Principal{}, "list_canisters")
	var q agent.QueryResponse
	if code != http.StatusOK || cborx.Unmarshal(body, &q) != nil || q.Status != agent.StatusRejected || q.Signatures == nil {
		t.Errorf("list_canisters without subnet admins: %d %+v", code, q)
	}
}
