package kinds

import (
	"reflect"
	"testing"

	"alpnib.dev/ic/nns"
)

// What the engines rely on of every entry in All: a name of its own that
// is its block's, a New of its own type, a documented block of that type,
// and a function no other kind runs (or a native action).
func TestEveryKindInTheTableIsWhatTheEnginesTakeItFor(t *testing.T) {
	names, functions := map[string]bool{}, map[nns.NnsFunction]string{}
	for _, k := range All {
		name := k.Name()
		if names[name] {
			t.Errorf("two kinds are named %s", name)
		}
		names[name] = true
		if Of(name) != k {
			t.Errorf("Of(%q) is not the table's entry", name)
		}
		if reflect.TypeOf(k.New()) != reflect.TypeOf(k) {
			t.Errorf("%s: New makes a %T, the table holds a %T", name, k.New(), k)
		}
		docs := k.Docs()
		if len(docs) == 0 || docs[0].Header != name+" { }" || docs[0].Type != reflect.TypeOf(k).Elem() || docs[0].Since == "" || docs[0].Doc == "" {
			t.Errorf("%s: its first doc is %+v, want its own block, typed, with a since and a doc", name, docs)
		}
		if reflect.TypeOf(k.NewPayload()).Kind() != reflect.Pointer {
			t.Errorf("%s: NewPayload is a %T, not a pointer to decode into", name, k.NewPayload())
		}
		fn := k.Function()
		if fn == nns.FunctionUnspecified {
			continue
		}
		if other, ok := functions[fn]; ok {
			t.Errorf("%s and %s both run %s: an on-chain proposal would match both", other, name, fn)
		}
		functions[fn] = name
		if OfFunction(fn) != k {
			t.Errorf("OfFunction(%s) is not %s", fn, name)
		}
	}
}
