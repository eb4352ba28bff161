package idl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/ic/candid"
)

func mustParse(t *testing.T, src string) *Program {
	t.Helper()
	p, err := Parse("test.did", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestARecursiveListBecomesACycleInTheTypeGraph(t *testing.T) {
	p := mustParse(t, `type List = opt record { head : int; tail : List };`)
	list := p.Types["List"].Resolved()
	if list.Kind != candid.KindOpt {
		t.Fatalf("List is %s, want opt", list.Kind)
	}
	rec := list.Elem.Resolved()
	if rec.Kind != candid.KindRecord || len(rec.Fields) != 2 {
		t.Fatalf("List's element is %s", rec)
	}
	tail := rec.Fields[1]
	if tail.ID != candid.FieldHash("tail") && rec.Fields[0].ID != candid.FieldHash("tail") {
		t.Fatalf("no tail field in %s", rec)
	}
	for _, f := range rec.Fields {
		if f.Name == "tail" && f.Type.Resolved() != list {
			t.Errorf("tail does not point back at List")
		}
	}
}

func TestTupleFieldsAreNumberedFromZeroAndAfterTheLastExplicitID(t *testing.T) {
	p := mustParse(t, `type T = record { nat; text; 10 : bool; int };`)
	var ids []uint32
	for _, f := range p.Types["T"].Resolved().Fields {
		ids = append(ids, f.ID)
	}
	want := []uint32{0, 1, 10, 11}
	if len(ids) != len(want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("ids %v, want %v", ids, want)
		}
	}
}

func TestAVariantShorthandLabelHasTypeNull(t *testing.T) {
	p := mustParse(t, `type C = variant { red; "green"; 7 };`)
	for _, f := range p.Types["C"].Resolved().Fields {
		if f.Type.Resolved().Kind != candid.KindNull {
			t.Errorf("field %d has type %s, want null", f.ID, f.Type)
		}
	}
	if got := len(p.Types["C"].Resolved().Fields); got != 3 {
		t.Errorf("%d fields, want 3", got)
	}
}

func TestBlobIsVecNat8(t *testing.T) {
	p := mustParse(t, `type B = blob;`)
	b := p.Types["B"].Resolved()
	if b.Kind != candid.KindVec || b.Elem.Resolved().Kind != candid.KindNat8 {
		t.Errorf("blob is %s", b)
	}
}

func TestServiceMethodsCarryTheirSignaturesAndAnnotations(t *testing.T) {
	p := mustParse(t, `
type id = nat64;
service : {
  get : (id) -> (opt text) query;
  put : (key : id, value : text) -> ();
  ping : () -> () oneway;
  both : () -> () composite_query;
}`)
	get, ok := p.Method("get")
	if !ok || !get.Query() || len(get.Args) != 1 || get.Args[0].Resolved().Kind != candid.KindNat64 {
		t.Errorf("get = %+v", get)
	}
	put, _ := p.Method("put")
	if len(put.Args) != 2 || len(put.Results) != 0 || put.Query() {
		t.Errorf("put = %+v", put)
	}
	ping, _ := p.Method("ping")
	if len(ping.Modes) != 1 || ping.Modes[0] != candid.ModeOneway {
		t.Errorf("ping modes %v", ping.Modes)
	}
	both, _ := p.Method("both")
	if !both.Query() || both.Modes[0] != candid.ModeCompositeQuery {
		t.Errorf("both modes %v", both.Modes)
	}
	names := []string{}
	for _, m := range p.Methods() {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "both,get,ping,put" {
		t.Errorf("methods %v are not sorted by name", names)
	}
}

func TestAClassKeepsItsInitArguments(t *testing.T) {
	p := mustParse(t, `service : (nat, text) -> { f : () -> () }`)
	if !p.IsClass || len(p.Init) != 2 || p.Init[1].Resolved().Kind != candid.KindText {
		t.Errorf("class: IsClass=%v Init=%v", p.IsClass, p.Init)
	}
	p = mustParse(t, `service : { f : () -> () }`)
	if p.IsClass || p.Init != nil {
		t.Errorf("plain service: IsClass=%v Init=%v", p.IsClass, p.Init)
	}
}

func TestNestedBlockCommentsAndEscapesAreRead(t *testing.T) {
	p := mustParse(t, "/* outer /* inner */ still comment */ // line\n"+
		`type T = record { "a\"b" : nat; "\u{1F4E6}" : nat; "\41" : nat; "x_y\n" : nat };`)
	names := map[string]bool{}
	for _, f := range p.Types["T"].Resolved().Fields {
		names[f.Name] = true
	}
	for _, want := range []string{"a\"b", "📦", "A", "x_y\n"} {
		if !names[want] {
			t.Errorf("no field %q in %v", want, names)
		}
	}
}

func TestNumbersAcceptUnderscoresAndHex(t *testing.T) {
	p := mustParse(t, `type T = record { 1_000 : nat; 0x2A : nat; 0xf_f : nat };`)
	_ = p
	fs := p.Types["T"].Resolved().Fields
	if fs[0].ID != 42 || fs[1].ID != 255 || fs[2].ID != 1000 {
		t.Errorf("ids %d %d %d", fs[0].ID, fs[1].ID, fs[2].ID)
	}
}

func TestBadDescriptionsAreRejectedWithFileLineAndColumn(t *testing.T) {
	cases := []struct{ name, src, where, what string }{
		{"unbound name", "type A = record {\n  x : B };", "t.did:2:7", "unbound type identifier B"},
		{"vacuous cycle", "type A = B;\ntype B = A;", "t.did:", "cyclic type definition"},
		{"duplicate field", "type A = record { a : nat; a : int };", "t.did:1:28", "hash collision"},
		{"hash collision", `type A = variant { "📦🍦"; 1832283146 };`, "t.did:1:", "hash collision"},
		{"duplicate definition", "type A = nat;\ntype A = int;", "t.did:2:1", "duplicate binding for A"},
		{"oneway with results", "type F = func () -> (nat) oneway;", "t.did:1:", "oneway"},
		{"method not a function", "type X = nat;\nservice : { m : X }", "t.did:2:13", "non-function"},
		{"service not a service", "type F = func () -> ();\nservice : F", "t.did:2:11", "not a service type"},
		{"unclosed comment", "type A = nat; /* /* */", "t.did:1:15", "unclosed comment"},
		{"surrogate escape", `type A = record { "\u{DFFF}" : nat };`, "t.did:1:20", "surrogate"},
		{"escape out of range", `type A = record { "\u{110000}" : nat };`, "t.did:1:20", "out of range"},
		{"keyword as a name", "type nat = int;", "t.did:1:6", "keyword"},
		{"field id too large", "type A = record { 4294967296 : nat };", "t.did:1:19", "2^32"},
		{"missing semicolon", "type A = nat type B = int;", "t.did:1:14", `expected ";"`},
		{"import from memory", `import "x.did";`, "t.did:1:1", "ParseFile"},
		{"two annotations", "type F = func () -> () query oneway;", "t.did:1:", "at most one"},
		{"unterminated text", `type A = record { "abc : nat };`, "t.did:1:19", "unclosed text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.did", []byte(c.src))
			if err == nil {
				t.Fatalf("accepted %q", c.src)
			}
			if !strings.HasPrefix(err.Error(), c.where) || !strings.Contains(err.Error(), c.what) {
				t.Errorf("error %q, want it at %s saying %q", err, c.where, c.what)
			}
		})
	}
}

func TestDeepNestingFailsWithAnErrorNotAStackOverflow(t *testing.T) {
	src := "type A = " + strings.Repeat("opt ", 100000) + "nat;"
	_, err := Parse("deep.did", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Fatalf("err = %v", err)
	}
	_, err = ParseValues(strings.Repeat("(", 100000), []*candid.Type{candid.Nat()})
	if err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Fatalf("values: err = %v", err)
	}
}

func TestImportsResolveRelativeToTheImportingFileAndEachFileIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.did", `import "lib/a.did"; import "lib/b/b.did"; import service "svc.did"; service : { own : (A) -> (B) }`)
	write("lib/a.did", `import "b/b.did"; type A = record { b : B };`)
	write("lib/b/b.did", `import "../a.did"; type B = nat;`) // a cycle back to a.did
	write("svc.did", `type S = text; service : { imported : (S) -> () }`)
	p, err := ParseFile(filepath.Join(dir, "main.did"))
	if err != nil {
		t.Fatalf("ParseFile: %v", err)
	}
	for _, name := range []string{"A", "B", "S"} {
		if p.Types[name] == nil {
			t.Errorf("type %s not imported", name)
		}
	}
	if _, ok := p.Method("imported"); !ok {
		t.Errorf("methods of an `import service` file are not merged")
	}
	if _, ok := p.Method("own"); !ok {
		t.Errorf("own method missing")
	}

	write("dup.did", `import service "svc.did"; service : { imported : () -> () }`)
	if _, err := ParseFile(filepath.Join(dir, "dup.did")); err == nil || !strings.Contains(err.Error(), "duplicate imported method") {
		t.Errorf("a method defined twice through imports: err = %v", err)
	}
	write("missing.did", `import "nope.did";`)
	if _, err := ParseFile(filepath.Join(dir, "missing.did")); err == nil || !strings.Contains(err.Error(), "missing.did:1:1") {
		t.Errorf("a missing import: err = %v", err)
	}
}

func TestCommentsMayFillARecordBodyAndTrailCommas(t *testing.T) {
	p := mustParse(t, `
type Empty = record {
  // Intentionally left blank.
};
type V = variant {
  A : nat;
  // keep in sync
};
service : (Empty) -> {
  f : (nat, text,) -> (V);
}`)
	if n := len(p.Types["Empty"].Resolved().Fields); n != 0 {
		t.Errorf("Empty has %d fields", n)
	}
	f, ok := p.Method("f")
	if !ok || len(f.Args) != 2 {
		t.Errorf("f = %+v", f)
	}
}

func TestAUnicodeEscapeMustCloseRightAfterItsDigits(t *testing.T) {
	for _, src := range []string{`type A = record { "\u{26" : nat };`, `type A = record { "\u{}" : nat };`} {
		_, err := Parse("t.did", []byte(src))
		if err == nil {
			t.Errorf("%s accepted", src)
		}
	}
	if _, err := ParseValues(`("\u{26_03}")`, []*candid.Type{candid.Text()}); err != nil {
		t.Errorf("an escape with an underscore: %v", err)
	}
}

func TestAByteOrderMarkAtTheStartIsIgnored(t *testing.T) {
	p := mustParse(t, "\ufefftype A = nat;")
	if p.Types["A"] == nil {
		t.Errorf("type A missing")
	}
}
