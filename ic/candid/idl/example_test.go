package idl_test

import (
	"fmt"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/candid/idl"
)

func ExampleParse() {
	p, err := idl.Parse("counter.did", []byte(`
type Count = record { value : nat; owner : opt principal };
service : {
  get : () -> (Count) query;
  add : (nat) -> ();
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range p.Methods() {
		fmt.Println(m.Name, len(m.Args), "args,", len(m.Results), "results, query:", m.Query())
	}
	// Output:
	// add 1 args, 0 results, query: false
	// get 0 args, 1 results, query: true
}

func ExampleParseValues() {
	typ := candid.Record(
		candid.NamedField("value", candid.Nat()),
		candid.NamedField("owner", candid.Opt(candid.Principal())),
	)
	vs, err := idl.ParseValues(`(record { value = 1_000 })`, []*candid.Type{typ})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(vs[0])
	_, err = idl.ParseValues(`(record { value = -1 })`, []*candid.Type{typ})
	fmt.Println(err)
	// Output:
	// record { value = 1000; owner = null }
	// 1:19: -1 is negative, not a nat
}
