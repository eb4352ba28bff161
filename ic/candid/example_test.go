package candid_test

import (
	"fmt"
	"math/big"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

type SubnetType struct {
	candid.OneOf
	Application *struct{} `candid:"application"`
	System      *struct{} `candid:"system"`
}

type Subnet struct {
	ID    principal.Principal   `candid:"subnet_id"`
	Type  SubnetType            `candid:"subnet_type"`
	Nodes []principal.Principal `candid:"node_ids"`
	Label *string               `candid:"label"` // opt text
}

func ExampleMarshal() {
	in := Subnet{
		ID:   principal.MustDecode("tdb26-jop6k-aogll-7ltgs-eruif-6kk7m-qpktf-gdiqx-mxtrf-vb5e6-eqe"),
		Type: SubnetType{System: &struct{}{}},
	}
	data, err := candid.Marshal(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out Subnet
	if err := candid.Unmarshal(data, &out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.ID, out.Type.System != nil, out.Label == nil)
	// Output: tdb26-jop6k-aogll-7ltgs-eruif-6kk7m-qpktf-gdiqx-mxtrf-vb5e6-eqe true true
}

func ExampleDecodeValues() {
	// type List = opt record { head : int; tail : List };
	list := candid.Placeholder()
	_ = list.Define(candid.Opt(candid.Record(
		candid.NamedField("head", candid.Int()),
		candid.NamedField("tail", list),
	)))
	one := candid.Some(candid.RecordValue(
		candid.FieldValue{ID: candid.FieldHash("head"), Name: "head", Value: candid.IntValue(bigOne)},
		candid.FieldValue{ID: candid.FieldHash("tail"), Name: "tail", Value: candid.None()},
	))
	data, _ := candid.EncodeValues([]*candid.Type{list}, []candid.Value{one})
	vals, err := candid.DecodeValues(data, []*candid.Type{list})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(list)
	fmt.Println(vals[0], candid.Equal(vals[0], one))
	// Output:
	// μ0.opt record { head : int; tail : μ0 }
	// opt record { head = 1; tail = null } true
}

var bigOne = big.NewInt(1)
