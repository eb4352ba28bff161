package idl

import (
	"reflect"
	"strings"
	"testing"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

const registryLike = `
type NodeId = principal;
type Req = record { subnet_id : principal; node_ids_add : vec NodeId; note : opt text };
type Res = variant { Ok; Err : text };
type List = opt record { head : nat; tail : List };
service : {
  update : (Req) -> (Res);
  list : () -> (List) query;
}`

func TestAClientTypeThatMatchesTheDescriptionPasses(t *testing.T) {
	p := mustParse(t, registryLike)
	// The client leaves out the optional note and knows one result case less.
	req := candid.Record(
		candid.NamedField("subnet_id", candid.Principal()),
		candid.NamedField("node_ids_add", candid.Vec(candid.Principal())),
	)
	res := candid.Variant(
		candid.NamedField("Ok", candid.Null()),
		candid.NamedField("Err", candid.Text()),
		candid.NamedField("Later", candid.Nat()),
	)
	if err := p.CheckMethod("update", []*candid.Type{req}, []*candid.Type{res}); err != nil {
		t.Errorf("CheckMethod: %v", err)
	}
	list := candid.Placeholder()
	if err := list.Define(candid.Opt(candid.Record(
		candid.NamedField("head", candid.Int()), // nat in the description, int here: nat <: int
		candid.NamedField("tail", list),
	))); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckMethod("list", nil, []*candid.Type{list}); err != nil {
		t.Errorf("recursive result: %v", err)
	}
}

func TestAClientTypeThatDriftedIsNamedByItsPath(t *testing.T) {
	p := mustParse(t, registryLike)
	res := candid.Variant(candid.NamedField("Ok", candid.Null()), candid.NamedField("Err", candid.Text()))
	cases := []struct {
		name string
		req  *candid.Type
		res  *candid.Type
		want string
	}{
		{"wrong field type", candid.Record(
			candid.NamedField("subnet_id", candid.Text()),
			candid.NamedField("node_ids_add", candid.Vec(candid.Principal())),
		), res, "argument 1: field subnet_id: text is not a subtype of principal"},
		{"missing required field", candid.Record(
			candid.NamedField("subnet_id", candid.Principal()),
		), res, "argument 1: field node_ids_add: missing"},
		{"wrong type inside opt", candid.Record(
			candid.NamedField("subnet_id", candid.Principal()),
			candid.NamedField("node_ids_add", candid.Vec(candid.Principal())),
			candid.NamedField("note", candid.Opt(candid.Nat())),
		), res, "argument 1: field note: opt: nat is not a subtype of text"},
		{"result case unknown to the client", candid.Record(
			candid.NamedField("subnet_id", candid.Principal()),
			candid.NamedField("node_ids_add", candid.Vec(candid.Principal())),
		), candid.Variant(candid.NamedField("Ok", candid.Null())), "result 1: case Err: not in the expected variant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.CheckMethod("update", []*candid.Type{c.req}, []*candid.Type{c.res})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to say %q", err, c.want)
			}
		})
	}
	if err := p.CheckMethod("nope", nil, nil); err == nil {
		t.Errorf("an unknown method passed")
	}
}

func TestCompatibleIsStricterThanCandidSubtypingOnlyInsideOpt(t *testing.T) {
	a, b := candid.Opt(candid.Nat()), candid.Opt(candid.Text())
	if !candid.IsSubtype(a, b) {
		t.Fatalf("candid.IsSubtype(opt nat, opt text) is false; the premise of this test changed")
	}
	if err := Compatible(a, b); err == nil {
		t.Errorf("Compatible(opt nat, opt text) passed")
	}
	for _, pair := range [][2]*candid.Type{
		{candid.Nat(), candid.Opt(candid.Nat())},
		{candid.Null(), candid.Opt(candid.Text())},
		{candid.Nat(), candid.Reserved()},
		{candid.Empty(), candid.Text()},
		{candid.Service(), candid.Principal()},
		{candid.Func([]*candid.Type{candid.Int()}, nil), candid.Func([]*candid.Type{candid.Nat()}, nil)},
	} {
		if err := Compatible(pair[0], pair[1]); err != nil {
			t.Errorf("Compatible(%s, %s): %v", pair[0], pair[1], err)
		}
	}
	if err := Compatible(candid.Func(nil, nil, candid.ModeQuery), candid.Func(nil, nil)); err == nil {
		t.Errorf("a query func passed as an update func")
	}
}

// goUpdateRequest is what a Go client would marshal for `update`.
type goUpdateRequest struct {
	SubnetID   principal.Principal   `candid:"subnet_id"`
	NodeIDsAdd []principal.Principal `candid:"node_ids_add"`
	Note       *string               `candid:"note"`
}

func TestGoStructTypesAreCheckedAgainstTheDescription(t *testing.T) {
	p := mustParse(t, registryLike)
	req, err := candid.TypeOf(reflect.TypeFor[goUpdateRequest]())
	if err != nil {
		t.Fatalf("TypeOf: %v", err)
	}
	res := candid.Variant(candid.NamedField("Ok", candid.Null()), candid.NamedField("Err", candid.Text()))
	if err := p.CheckMethod("update", []*candid.Type{req}, []*candid.Type{res}); err != nil {
		t.Errorf("CheckMethod with the Go struct's type: %v", err)
	}
}
