package kinds

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"alpnib.dev/ic/nns"
)

// TableProblems is what the engines cannot rely on in table: each kind
// must have a name of its own that is its block's, a New of the block its
// docs document, say for what drift it is generated exactly when it
// generates (the lists of --help and docs/config.md come from that), and
// have an on-chain action shape of its own, which it claims and no other
// kind does, over every shape an action can take.
func TableProblems(table []Kind) []string {
	var out []string
	problem := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	names, shapes := map[string]bool{}, map[Shape]string{}
	for _, k := range table {
		name := k.Name()
		if names[name] {
			problem("two kinds are named %s", name)
		}
		names[name] = true
		docs := k.Docs()
		if len(docs) == 0 || docs[0].Header != name+" { }" || reflect.PointerTo(docs[0].Type) != reflect.TypeOf(k.New()) || docs[0].Since == "" || docs[0].Doc == "" {
			problem("%s: its first doc is %+v, want its own block, of New's type (%T), with a since and a doc", name, docs, k.New())
		}
		if g, ok := k.(interface{ generates() bool }); ok && len(docs) > 0 {
			switch says := docs[0].Generates != ""; {
			case g.generates() && !says:
				problem("%s generates proposals from drift, but its Def's Generates does not say for what drift, so alp plan --help and docs/config.md leave it out", name)
			case !g.generates() && says:
				problem("%s says it is generated %s, but its Def has no Generate", name, docs[0].Generates)
			}
		}
		if other, ok := shapes[k.Shape()]; ok {
			problem("%s and %s both make %s actions: an on-chain proposal would match both", other, name, k.Shape())
		}
		shapes[k.Shape()] = name
	}
	claimed := map[string]bool{}
	for _, a := range EveryActionShape(table) {
		var by []string
		for _, k := range table {
			if _, mine := k.Claim(a); mine {
				by = append(by, k.Name())
				claimed[k.Name()] = true
				if k.Shape() != ShapeOf(a) {
					problem("%s claims a %s action, which is not its own %s", k.Name(), ShapeOf(a), k.Shape())
				}
			}
		}
		if len(by) > 1 {
			problem("a %s action is claimed by %s: exactly one kind may claim it", ShapeOf(a), strings.Join(by, " and "))
		}
	}
	for _, k := range table {
		if !claimed[k.Name()] {
			problem("%s claims no action shape there is (its own is %s)", k.Name(), k.Shape())
		}
	}
	return out
}

// EveryActionShape is an action of every shape nns.Action can take: each
// case of each variant in it (a record's variant fields also unset), and
// an ExecuteNnsFunction of every function up to 64, or up to the highest
// a kind of table runs.
func EveryActionShape(table []Kind) []*nns.Action {
	var out []*nns.Action
	last := int32(64)
	for _, k := range table {
		last = max(last, int32(k.Shape().Function))
	}
	at := reflect.TypeFor[nns.Action]()
	for i := 0; i < at.NumField(); i++ {
		f := at.Field(i)
		if f.Type == oneOfType || !f.IsExported() {
			continue
		}
		if f.Type == reflect.TypeFor[*nns.ExecuteNnsFunction]() {
			for fn := int32(0); fn <= last; fn++ {
				out = append(out, &nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: fn}})
			}
			continue
		}
		for _, v := range valuesOf(f.Type) {
			a := &nns.Action{}
			reflect.ValueOf(a).Elem().Field(i).Set(v)
			out = append(out, a)
		}
	}
	return out
}

// valuesOf is a value of t for each shape it can take.
func valuesOf(t reflect.Type) []reflect.Value {
	if t.Kind() == reflect.Pointer {
		var out []reflect.Value
		for _, v := range valuesOf(t.Elem()) {
			p := reflect.New(t.Elem())
			p.Elem().Set(v)
			out = append(out, p)
		}
		return out
	}
	if t.Kind() != reflect.Struct {
		return []reflect.Value{reflect.Zero(t)}
	}
	if t.NumField() > 0 && t.Field(0).Type == oneOfType {
		var out []reflect.Value
		for i := 1; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && f.Type.Kind() == reflect.Pointer {
				for _, v := range valuesOf(f.Type) {
					s := reflect.New(t).Elem()
					s.Field(i).Set(v)
					out = append(out, s)
				}
			}
		}
		return out
	}
	out := []reflect.Value{reflect.New(t).Elem()}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Pointer || !holdsVariant(f.Type) {
			continue
		}
		next := append([]reflect.Value(nil), out...) // the field unset
		for _, base := range out {
			for _, v := range valuesOf(f.Type) {
				c := reflect.New(t).Elem()
				c.Set(base)
				c.Field(i).Set(v)
				next = append(next, c)
			}
		}
		out = next
	}
	return out
}

// What the engines rely on of every entry in All; and Of and OfFunction
// find each.
func TestEveryKindInTheTableIsWhatTheEnginesTakeItFor(t *testing.T) {
	for _, p := range TableProblems(All) {
		t.Error(p)
	}
	for _, k := range All {
		if Of(k.Name()) != k {
			t.Errorf("Of(%q) is not the table's entry", k.Name())
		}
		if fn := k.Shape().Function; fn != nns.FunctionUnspecified && OfFunction(fn) != k {
			t.Errorf("OfFunction(%s) is not %s", fn, k.Name())
		}
	}
}

// A kind claims only the actions of its own shape: remove_node_provider
// claims AddOrRemoveNodeProvider's ToRemove and not its ToAdd, which no
// kind makes, and a kind that would make another's shape is refused by
// the table's check, naming both.
func TestAKindClaimsOnlyItsOwnActions(t *testing.T) {
	id := nns.NodeProvider{}
	add := &nns.Action{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToAdd: &id}}}
	if k := Claimant(add); k != nil {
		t.Errorf("an AddOrRemoveNodeProvider ToAdd is claimed by %s", k.Name())
	}
	remove := &nns.Action{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &id}}}
	if k := Claimant(remove); k == nil || k.Name() != "remove_node_provider" {
		t.Errorf("an AddOrRemoveNodeProvider ToRemove is claimed by %v", k)
	}
	shadow := Define(Def[RemoveNodes, nns.RemoveNodesPayload, map[string]NodeFacts]{
		Name: "shadow", Since: "v0.6.0", Doc: "Makes update_subnet's action.",
		OnChain: Execute[nns.RemoveNodesPayload](nns.FunctionUpdateConfigOfSubnet),
	})
	problems := strings.Join(TableProblems(append(append([]Kind(nil), All...), shadow)), "\n")
	if !strings.Contains(problems, "update_subnet and shadow both make") || !strings.Contains(problems, "claimed by update_subnet and shadow") {
		t.Errorf("a kind making another's action is not refused:\n%s", problems)
	}
	if Claimant(&nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(nns.FunctionUpdateConfigOfSubnet)}}) == nil {
		t.Error("update_subnet's action has no claimant")
	}
}

// A kind that generates from drift says for what, and one that says so
// generates: --help and docs/config.md list the kinds by what they say,
// so a kind that generated silently would be missing from both.
func TestAKindThatGeneratesSaysForWhatDrift(t *testing.T) {
	generate := func(*Drift) ([]Generated, []string) { return nil, nil }
	silent := Define(Def[RemoveNodes, nns.RemoveNodesPayload, map[string]NodeFacts]{
		Name: "silent", Since: "v0.6.0", Doc: "Generates without saying for what.",
		OnChain: Execute[nns.RemoveNodesPayload](nns.NnsFunction(60)), Generate: generate,
	})
	idle := Define(Def[RemoveNodes, nns.RemoveNodesPayload, map[string]NodeFacts]{
		Name: "idle", Since: "v0.6.0", Doc: "Says it generates, and does not.", Generates: "for nothing",
		OnChain: Execute[nns.RemoveNodesPayload](nns.NnsFunction(61)),
	})
	problems := strings.Join(TableProblems(append(append([]Kind(nil), All...), silent, idle)), "\n")
	for _, want := range []string{"silent generates proposals from drift, but its Def's Generates does not say", "idle says it is generated for nothing, but its Def has no Generate"} {
		if !strings.Contains(problems, want) {
			t.Errorf("the table's check does not say %q:\n%s", want, problems)
		}
	}
}

// Every ExecuteNnsFunction a kind of the table runs is a shape the
// table's check goes over, also past the functions alp knows today.
func TestTheTablesCheckCoversEveryFunctionItsKindsRun(t *testing.T) {
	far := func(name string) Kind {
		return Define(Def[RemoveNodes, nns.RemoveNodesPayload, map[string]NodeFacts]{
			Name: name, Since: "v0.6.0", Doc: "Runs a function far past today's.",
			OnChain: Execute[nns.RemoveNodesPayload](nns.NnsFunction(200)),
		})
	}
	if problems := TableProblems(append(append([]Kind(nil), All...), far("far"))); len(problems) != 0 {
		t.Errorf("a kind of function 200 alone: %v", problems)
	}
	problems := strings.Join(TableProblems(append(append([]Kind(nil), All...), far("far"), far("farther"))), "\n")
	if !strings.Contains(problems, "claimed by far and farther") {
		t.Errorf("two kinds of function 200 are not refused as both claiming it:\n%s", problems)
	}
}
