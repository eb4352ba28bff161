package localnet

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/candid/idl"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

func pid(tag string) principal.Principal { return principal.SelfAuthenticating([]byte(tag)) }

// client is the smallest IC client that does what ic/agent does: fetch the
// root key, sign envelopes, verify certificates.
type client struct {
	t        *testing.T
	url      string
	id       identity.Identity
	verifier *certificate.Verifier
	expiry   func() uint64
}

func newClient(t *testing.T, url string, id identity.Identity) *client {
	t.Helper()
	resp, err := http.Get(url + "/api/v2/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var st struct {
		RootKey     []byte `cbor:"root_key"`
		ImplVersion string `cbor:"impl_version"`
	}
	if err := cborx.Unmarshal(body, &st); err != nil || st.ImplVersion != ImplVersion {
		t.Fatalf("status: %v %q", err, st.ImplVersion)
	}
	v, err := certificate.NewVerifier(st.RootKey, certificate.Options{})
	if err != nil {
		t.Fatalf("the fetched root key: %v", err)
	}
	return &client{t: t, url: url, id: id, verifier: v, expiry: func() uint64 { return uint64(time.Now().Add(3 * time.Minute).UnixNano()) }}
}

type rejectError struct {
	code    uint64
	message string
}

func (r *rejectError) Error() string { return fmt.Sprintf("reject %d: %s", r.code, r.message) }

func (c *client) query(canister principal.Principal, method string, arg []byte) ([]byte, error) {
	c.t.Helper()
	code, body := c.send("v2", "query", canister, agent.Request{Type: agent.TypeQuery, CanisterID: canister, MethodName: method, Arg: arg})
	if code != 200 {
		c.t.Fatalf("query %s: HTTP %d %s", method, code, body)
	}
	var r struct {
		Status        string               `cbor:"status"`
		Reply         struct{ Arg []byte } `cbor:"reply"`
		RejectCode    uint64               `cbor:"reject_code"`
		RejectMessage string               `cbor:"reject_message"`
	}
	if err := cborx.Unmarshal(body, &r); err != nil {
		c.t.Fatal(err)
	}
	if r.Status != "replied" {
		return nil, &rejectError{r.RejectCode, r.RejectMessage}
	}
	return r.Reply.Arg, nil
}

func (c *client) send(version, kind string, canister principal.Principal, req agent.Request) (int, []byte) {
	c.t.Helper()
	return c.sendTo(fmt.Sprintf("/api/%s/canister/%s/%s", version, canister, kind), req)
}

// sendTo signs req as the client and posts it to path.
func (c *client) sendTo(path string, req agent.Request) (int, []byte) {
	c.t.Helper()
	req.Sender = c.id.Sender()
	if req.IngressExpiry == 0 {
		req.IngressExpiry = c.expiry()
	}
	env, _, err := agent.Sign(c.id, req)
	if err != nil {
		c.t.Fatal(err)
	}
	body, err := env.Marshal()
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.Post(c.url+path, "application/cbor", bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// call makes a synchronous v3 call and reads its outcome from the verified
// certificate.
func (c *client) call(canister principal.Principal, method string, arg []byte) ([]byte, error) {
	c.t.Helper()
	req := agent.Request{Type: agent.TypeCall, CanisterID: canister, MethodName: method, Arg: arg, Nonce: []byte(fmt.Sprint(time.Now().UnixNano()))}
	req.Sender, req.IngressExpiry = c.id.Sender(), c.expiry()
	rid := req.ID()
	code, body := c.send("v3", "call", canister, req)
	if code != 200 {
		c.t.Fatalf("call %s: HTTP %d %s", method, code, body)
	}
	var r struct {
		Status      string `cbor:"status"`
		Certificate []byte `cbor:"certificate"`
	}
	if err := cborx.Unmarshal(body, &r); err != nil || r.Status != "replied" {
		c.t.Fatalf("call reply: %v %q", err, r.Status)
	}
	return c.outcome(r.Certificate, rid, canister)
}

func (c *client) outcome(raw []byte, rid agent.RequestID, canister principal.Principal) ([]byte, error) {
	c.t.Helper()
	cert, err := c.verifier.Verify(raw, certificate.ForCanister(canister))
	if err != nil {
		c.t.Fatalf("certificate does not verify under the fetched root key: %v", err)
	}
	status, _ := cert.Tree.Lookup([]byte("request_status"), rid[:], []byte("status"))
	switch string(status) {
	case "replied":
		reply, _ := cert.Tree.Lookup([]byte("request_status"), rid[:], []byte("reply"))
		return reply, nil
	case "rejected":
		code, _ := cert.Tree.Lookup([]byte("request_status"), rid[:], []byte("reject_code"))
		msg, _ := cert.Tree.Lookup([]byte("request_status"), rid[:], []byte("reject_message"))
		n, _, _ := leb128.Unsigned(code)
		return nil, &rejectError{n, string(msg)}
	}
	return nil, errNotDone
}

var errNotDone = errors.New("not done")

// network is a localnet with the NNS seeded: subnet S = {member}, spare
// unassigned, version v1 elected, neuron 42 controlled by the client.
type network struct {
	srv             *httptest.Server
	reg             *registry.Registry
	gov             *governance.Governance
	me              identity.Identity
	subnet, member  principal.Principal
	spare, provider principal.Principal
	operator        principal.Principal
}

func start(t *testing.T) *network {
	t.Helper()
	me, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	n := &network{reg: registry.New(), me: me, subnet: pid("subnet"), member: pid("member"), spare: pid("spare"), provider: pid("provider"), operator: pid("operator")}
	n.reg.AddDataCenter(registry.DataCenter{ID: "zh1", Region: "Europe,CH,Zurich"})
	n.reg.AddNodeOperator(registry.NodeOperator{ID: n.operator, Provider: n.provider, DataCenter: "zh1", NodeAllowance: 3})
	for _, node := range []principal.Principal{n.member, n.spare} {
		if _, err := n.reg.AddNode(registry.Node{ID: node, Operator: n.operator, IPv6: "::1"}); err != nil {
			t.Fatal(err)
		}
	}
	n.reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	off := false
	if _, err := n.reg.AddSubnet(registry.Subnet{ID: n.subnet, ReplicaVersion: "v1", Members: []principal.Principal{n.member}, SevEnabled: &off}); err != nil {
		t.Fatal(err)
	}
	n.gov = governance.New(governance.Config{}, RegistryExecutor(n.reg))
	n.gov.AddNeuron(governance.Neuron{ID: 42, Controller: me.Sender(), StakeE8s: 10})
	n.gov.AddNodeProvider(n.provider)
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.InstallNNS(n.reg, n.gov)
	n.srv = httptest.NewServer(s)
	t.Cleanup(n.srv.Close)
	return n
}

func mustMarshal(t *testing.T, v ...any) []byte {
	t.Helper()
	b, err := candid.Marshal(v...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRegistryQueriesRoundTripThroughTheHTTPInterface(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, identity.Anonymous{})
	raw, err := c.query(RegistryID, "get_subnet", mustMarshal(t, nns.GetSubnetRequest{SubnetID: &n.subnet}))
	if err != nil {
		t.Fatal(err)
	}
	var resp nns.GetSubnetResponse
	if err := candid.Unmarshal(raw, &resp); err != nil || resp.Ok == nil {
		t.Fatalf("get_subnet: %v %+v", err, resp)
	}
	if resp.Ok.ReplicaVersionID != "v1" || len(resp.Ok.Membership) != 1 || !bytes.Equal(resp.Ok.Membership[0], n.member.Bytes()) || resp.Ok.SubnetType.Name() != "application" {
		t.Fatalf("subnet record: %+v", resp.Ok)
	}
	// The reply has the canister's shapes: what the did declares, no opt
	// where it is plain (nor the reverse).
	prog, err := idl.ParseFile("../nns/testdata/registry_payloads.did")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := prog.Method("get_subnet")
	types, _, err := candid.Decode(raw)
	if err != nil || len(types) != 1 {
		t.Fatalf("reply types: %v", err)
	}
	if err := idl.Compatible(types[0], m.Results[0]); err != nil {
		t.Errorf("the reply does not read as registry.did's GetSubnetResponse: %v", err)
	}
	if err := idl.Compatible(m.Results[0], types[0]); err != nil {
		t.Errorf("registry.did's GetSubnetResponse does not read as the reply: %v", err)
	}
	unknown := pid("nope")
	raw, _ = c.query(RegistryID, "get_subnet", mustMarshal(t, nns.GetSubnetRequest{SubnetID: &unknown}))
	resp = nns.GetSubnetResponse{}
	if err := candid.Unmarshal(raw, &resp); err != nil || resp.Err == nil {
		t.Fatalf("unknown subnet: %v %+v", err, resp)
	}

	raw, err = c.query(RegistryID, "get_node_operators_and_dcs_of_node_provider", mustMarshal(t, n.provider))
	if err != nil {
		t.Fatal(err)
	}
	var ops nns.GetNodeOperatorsAndDcsOfNodeProviderResponse
	if err := candid.Unmarshal(raw, &ops); err != nil || ops.Ok == nil || len(*ops.Ok) != 1 {
		t.Fatalf("operators: %v %+v", err, ops)
	}
	if got := (*ops.Ok)[0]; got.DataCenter.Region != "Europe,CH,Zurich" || !bytes.Equal(got.NodeOperator.NodeOperatorPrincipalID, n.operator.Bytes()) {
		t.Fatalf("operator entry: %+v", got)
	}

	getValue := func(key string) *registrypb.HighCapacityRegistryGetValueResponse {
		t.Helper()
		arg, _ := proto.Marshal(&registrypb.RegistryGetValueRequest{Key: []byte(key)})
		raw, err := c.query(RegistryID, "get_value", arg)
		var gv registrypb.HighCapacityRegistryGetValueResponse
		if err != nil || proto.Unmarshal(raw, &gv) != nil {
			t.Fatalf("get_value %s: %v", key, err)
		}
		return &gv
	}
	if gv := getValue(nns.ReplicaVersionRecordKey("v1")); gv.Error != nil || gv.Version == 0 {
		t.Fatalf("get_value: %v", gv)
	}
	if gv := getValue(nns.ReplicaVersionRecordKey("v9")); gv.GetError().GetCode() != registrypb.RegistryError_KEY_NOT_PRESENT || gv.Error == nil {
		t.Fatalf("get_value of a missing key: %v", gv)
	}
}

func makeProposal(t *testing.T, c *client, neuron uint64, fn nns.NnsFunction, payload any) (uint64, *nns.GovernanceError) {
	t.Helper()
	title := "A proposal from the test"
	req := nns.ManageNeuronRequest{
		NeuronIDOrSubaccount: &nns.NeuronIDOrSubaccount{NeuronID: &nns.NeuronID{ID: neuron}},
		Command: &nns.ManageNeuronCommandRequest{MakeProposal: &nns.MakeProposalRequest{Title: &title, Summary: "test", URL: "https://forum.dfinity.org/t/a-test/1",
			Action: &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: mustMarshal(t, payload)}}}},
	}
	raw, err := c.call(GovernanceID, "manage_neuron", mustMarshal(t, req))
	if err != nil {
		t.Fatal(err)
	}
	var resp nns.ManageNeuronResponse
	if err := candid.Unmarshal(raw, &resp); err != nil || resp.Command == nil {
		t.Fatalf("manage_neuron reply: %v", err)
	}
	if resp.Command.Error != nil {
		return 0, resp.Command.Error
	}
	return resp.Command.MakeProposal.ProposalID.ID, nil
}

func proposalInfo(t *testing.T, c *client, id uint64) *nns.ProposalInfo {
	t.Helper()
	raw, err := c.query(GovernanceID, "get_proposal_info", mustMarshal(t, id))
	if err != nil {
		t.Fatal(err)
	}
	var info *nns.ProposalInfo
	if err := candid.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	return info
}

func TestAProposalMadeOverTheWireExecutesOrFailsAsTheRegistryRules(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	ok, gerr := makeProposal(t, c, 42, nns.FunctionChangeSubnetMembership, nns.ChangeSubnetMembershipPayload{SubnetID: n.subnet, NodeIDsAdd: []principal.Principal{n.spare}, NodeIDsRemove: []principal.Principal{}})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if info := proposalInfo(t, c, ok); info == nil || nns.ProposalStatus(info.Status) != nns.StatusExecuted || nns.Topic(info.Topic) != nns.TopicSubnetManagement {
		t.Fatalf("membership proposal: %+v", info)
	}
	if rec, _, _ := n.reg.Subnet(n.subnet); len(rec.Membership) != 2 {
		t.Fatal("membership did not change")
	}
	bad, gerr := makeProposal(t, c, 42, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{n.member}})
	if gerr != nil {
		t.Fatal(gerr)
	}
	info := proposalInfo(t, c, bad)
	if nns.ProposalStatus(info.Status) != nns.StatusFailed || info.FailureReason == nil || !strings.Contains(info.FailureReason.ErrorMessage, "is a member of a subnet") {
		t.Fatalf("remove_nodes of a member: %+v", info)
	}
	sev := true
	sevChange, _ := makeProposal(t, c, 42, nns.FunctionUpdateConfigOfSubnet, nns.UpdateSubnetPayload{SubnetID: n.subnet, Features: &nns.SubnetFeatures{SevEnabled: &sev}})
	if info := proposalInfo(t, c, sevChange); nns.ProposalStatus(info.Status) != nns.StatusFailed || !strings.Contains(info.FailureReason.ErrorMessage, "sev_enabled") {
		t.Fatalf("sev change: %+v", info)
	}
	garbage, _ := makeProposal(t, c, 42, nns.FunctionDeployGuestosToAllSubnetNodes, "not a payload")
	if info := proposalInfo(t, c, garbage); nns.ProposalStatus(info.Status) != nns.StatusFailed || !strings.Contains(info.FailureReason.ErrorMessage, "decode") {
		t.Fatalf("undecodable payload: %+v", info)
	}
	if info := proposalInfo(t, c, 999); info != nil {
		t.Fatalf("unknown proposal: %+v", info)
	}

	raw, err := c.query(GovernanceID, "list_proposals", mustMarshal(t, nns.ListProposalInfo{Limit: 10, IncludeStatus: []int32{int32(nns.StatusFailed)}}))
	var list nns.ListProposalInfoResponse
	if err != nil || candid.Unmarshal(raw, &list) != nil || len(list.ProposalInfo) != 3 {
		t.Fatalf("list_proposals: %v %d", err, len(list.ProposalInfo))
	}

	stranger := newClient(t, n.srv.URL, mustIdentity(t))
	if _, gerr := makeProposal(t, stranger, 42, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{}); gerr == nil || gerr.ErrorType != nns.ErrorTypeNotAuthorized {
		t.Fatalf("a stranger's proposal: %v", gerr)
	}
}

func mustIdentity(t *testing.T) identity.Identity {
	t.Helper()
	id, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestGovernanceQueriesAnswerPerCaller(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	raw, err := c.query(GovernanceID, "get_full_neuron", mustMarshal(t, uint64(42)))
	var full nns.GetFullNeuronResponse
	if err != nil || candid.Unmarshal(raw, &full) != nil || full.Ok == nil || *full.Ok.Controller != n.me.Sender() {
		t.Fatalf("get_full_neuron by the controller: %v %+v", err, full)
	}
	other := newClient(t, n.srv.URL, mustIdentity(t))
	raw, _ = other.query(GovernanceID, "get_full_neuron", mustMarshal(t, uint64(42)))
	full = nns.GetFullNeuronResponse{}
	if candid.Unmarshal(raw, &full) != nil || full.Err == nil || full.Err.ErrorType != nns.ErrorTypeNotAuthorized {
		t.Fatalf("get_full_neuron by a stranger: %+v", full)
	}
	raw, err = c.query(GovernanceID, "list_node_providers", mustMarshal(t))
	var nps nns.ListNodeProvidersResponse
	if err != nil || candid.Unmarshal(raw, &nps) != nil || len(nps.NodeProviders) != 1 || *nps.NodeProviders[0].ID != n.provider {
		t.Fatalf("list_node_providers: %v %+v", err, nps)
	}
}

func TestAnAsyncCallIsReadBackThroughReadState(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	title := "Remove the provider"
	arg := mustMarshal(t, nns.ManageNeuronRequest{ID: &nns.NeuronID{ID: 42}, Command: &nns.ManageNeuronCommandRequest{MakeProposal: &nns.MakeProposalRequest{Title: &title,
		Action: &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &n.provider}}}}}}})
	req := agent.Request{Type: agent.TypeCall, Sender: n.me.Sender(), IngressExpiry: c.expiry(), CanisterID: GovernanceID, MethodName: "manage_neuron", Arg: arg}
	rid := req.ID()
	if code, body := c.send("v2", "call", GovernanceID, req); code != http.StatusAccepted {
		t.Fatalf("v2 call: %d %s", code, body)
	}
	var reply []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, body := c.send("v2", "read_state", GovernanceID, agent.Request{Type: agent.TypeReadState, Paths: [][][]byte{{[]byte("request_status"), rid[:]}}})
		if code != 200 {
			t.Fatalf("read_state: %d %s", code, body)
		}
		var r struct {
			Certificate []byte `cbor:"certificate"`
		}
		if err := cborx.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		out, err := c.outcome(r.Certificate, rid, GovernanceID)
		if err == nil {
			reply = out
			break
		}
		if !errors.Is(err, errNotDone) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	var resp nns.ManageNeuronResponse
	if err := candid.Unmarshal(reply, &resp); err != nil || resp.Command.MakeProposal == nil {
		t.Fatalf("reply: %v", err)
	}
	if info := proposalInfo(t, c, resp.Command.MakeProposal.ProposalID.ID); nns.ProposalStatus(info.Status) != nns.StatusExecuted || nns.Topic(info.Topic) != nns.TopicParticipantManagement {
		t.Fatalf("provider removal: %+v", info)
	}
	// another sender may not read this request's status
	other := newClient(t, n.srv.URL, mustIdentity(t))
	if code, _ := other.send("v2", "read_state", GovernanceID, agent.Request{Type: agent.TypeReadState, Paths: [][][]byte{{[]byte("request_status"), rid[:]}}}); code != http.StatusForbidden {
		t.Fatalf("another sender's read_state: %d", code)
	}
}

func TestBadEnvelopesAreRefusedLikeAReplica(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	arg := mustMarshal(t, nns.GetSubnetRequest{SubnetID: &n.subnet})
	good := agent.Request{Type: agent.TypeQuery, Sender: n.me.Sender(), CanisterID: RegistryID, MethodName: "get_subnet", Arg: arg}
	sign := func(r agent.Request) []byte {
		env, _, err := agent.Sign(n.me, r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := env.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	post := func(canister string, body []byte) (int, string) {
		resp, err := http.Post(n.srv.URL+"/api/v2/canister/"+canister+"/query", "application/cbor", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	expired := good
	expired.IngressExpiry = uint64(time.Now().Add(-10 * time.Minute).UnixNano())
	farFuture := good
	farFuture.IngressExpiry = uint64(time.Now().Add(time.Hour).UnixNano())
	valid := good
	valid.IngressExpiry = c.expiry()
	tampered := sign(valid)
	tampered[len(tampered)-1] ^= 1 // inside the signature, the envelope's last field
	impostor := valid
	impostor.Sender = pid("someone else")
	cases := []struct {
		name, canister string
		body           []byte
		want           string
	}{
		{"an expired request", RegistryID.String(), sign(expired), "Invalid request expiry"},
		{"an expiry too far ahead", RegistryID.String(), sign(farFuture), "Invalid request expiry"},
		{"a bad signature", RegistryID.String(), tampered, "Failed to authenticate"},
		{"a sender that is not the key's principal", RegistryID.String(), sign(impostor), "Failed to authenticate"},
		{"a canister other than the URL's", GovernanceID.String(), sign(valid), "does not match effective canister id"},
		{"not CBOR", RegistryID.String(), []byte("hello"), "Could not parse body"},
	}
	for _, tc := range cases {
		code, body := post(tc.canister, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %q, want 400 %q", tc.name, code, body, tc.want)
		}
	}
	if code, body := post(RegistryID.String(), sign(valid)); code != 200 {
		t.Fatalf("the valid request was refused: %d %s", code, body)
	}

	if _, err := c.query(pid("no canister"), "x", nil); !isReject(err, DestinationInvalid) {
		t.Errorf("unknown canister: %v", err)
	}
	if _, err := c.query(RegistryID, "no_such_method", nil); !isReject(err, DestinationInvalid) {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := c.query(GovernanceID, "manage_neuron", nil); !isReject(err, DestinationInvalid) {
		t.Errorf("an update method as a query: %v", err)
	}
	if _, err := c.query(RegistryID, "get_subnet", []byte("DIDL garbage")); !isReject(err, CanisterError) {
		t.Errorf("an undecodable argument: %v", err)
	}
}

func isReject(err error, code RejectCode) bool {
	var r *rejectError
	return errors.As(err, &r) && r.code == uint64(code)
}

func TestQueryAnswersAreSignedByANodeTheSubnetCertifies(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	arg := mustMarshal(t, nns.GetSubnetRequest{SubnetID: &n.subnet})
	req := agent.Request{Type: agent.TypeQuery, Sender: n.me.Sender(), IngressExpiry: c.expiry(), CanisterID: RegistryID, MethodName: "get_subnet", Arg: arg}
	rid := req.ID()
	code, body := c.send("v2", "query", RegistryID, req)
	if code != 200 {
		t.Fatalf("query: %d %s", code, body)
	}
	var q struct {
		Status     string               `cbor:"status"`
		Reply      struct{ Arg []byte } `cbor:"reply"`
		Signatures []struct {
			Timestamp uint64 `cbor:"timestamp"`
			Signature []byte `cbor:"signature"`
			Identity  []byte `cbor:"identity"`
		} `cbor:"signatures"`
	}
	if err := cborx.Unmarshal(body, &q); err != nil || len(q.Signatures) != 1 {
		t.Fatalf("signatures: %v %d", err, len(q.Signatures))
	}
	// the node key, from a verified read_state of /subnet
	code, body = c.send("v2", "read_state", RegistryID, agent.Request{Type: agent.TypeReadState, Paths: [][][]byte{{[]byte("subnet")}}})
	var rs struct {
		Certificate []byte `cbor:"certificate"`
	}
	if code != 200 || cborx.Unmarshal(body, &rs) != nil {
		t.Fatalf("read_state /subnet: %d", code)
	}
	cert, err := c.verifier.Verify(rs.Certificate, certificate.ForCanister(RegistryID))
	if err != nil {
		t.Fatal(err)
	}
	s := q.Signatures[0]
	subnets, _ := cert.Tree.Subtree([]byte("subnet"))
	var der []byte
	for _, sub := range subnets.Children() {
		if k, st := sub.Tree.Lookup([]byte("node"), s.Identity, []byte("public_key")); st == certificate.Found {
			der = k
		}
		if ranges, st := sub.Tree.Lookup([]byte("canister_ranges")); st != certificate.Found || len(ranges) == 0 {
			t.Fatal("the subnet certifies no canister ranges")
		}
	}
	if der == nil {
		t.Fatal("the signing node's key is not certified")
	}
	hash := func(arg []byte) []byte {
		h, err := agent.HashOfMap(map[string]any{"status": "replied", "reply": map[string]any{"arg": arg}, "timestamp": s.Timestamp, "request_id": rid[:]})
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte(agent.DomainResponse), h[:]...)
	}
	if err := identity.Verify(der, hash(q.Reply.Arg), s.Signature); err != nil {
		t.Fatalf("the node signature does not verify: %v", err)
	}
	if err := identity.Verify(der, hash(append([]byte{0}, q.Reply.Arg...)), s.Signature); err == nil {
		t.Fatal("the signature verifies for another reply")
	}
}

func TestFinishedCallsAreForgottenAfterTheirRetention(t *testing.T) {
	clock := time.Now()
	s, err := New(Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	me := mustIdentity(t)
	s.Install(RegistryID, Methods{"ping": {Handler: func(context.Context, principal.Principal, []byte) ([]byte, error) { return []byte("pong"), nil }}})
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := newClient(t, hs.URL, me)
	c.expiry = func() uint64 { return uint64(clock.Add(time.Minute).UnixNano()) }
	if _, err := c.call(RegistryID, "ping", nil); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(RequestRetention + time.Second)
	c.verifier, _ = certificate.NewVerifier(s.RootKeyDER(), certificate.Options{Now: func() time.Time { return clock }})
	if _, err := c.call(RegistryID, "ping", nil); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) != 1 {
		t.Fatalf("%d request statuses kept, want only the fresh one", len(s.requests))
	}
}

func TestOnlyGovernanceMayCallARegistryMutation(t *testing.T) {
	n := start(t)
	c := newClient(t, n.srv.URL, n.me)
	_, err := c.call(RegistryID, "remove_nodes", mustMarshal(t, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{n.spare}}))
	if !isReject(err, CanisterError) || !strings.Contains(err.Error(), "only the governance canister") {
		t.Fatalf("a direct remove_nodes: %v", err)
	}
	if _, ok, _ := n.reg.Node(n.spare); !ok {
		t.Fatal("the node was removed")
	}
}
