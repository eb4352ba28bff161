package daemon

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestTheDaemonComposesComponentsAndKeepsNoAppOrVolumeInternals pins the
// shape issue 40 asked for: Daemon has at most 15 fields, and none of its
// methods reads or writes a field of an app or a vol, or calls one of
// their methods: those belong to the apps and volumes components
// (apps.go, volumes.go), which Daemon composes.
//
// The check reads the package's source: a selector whose name is a field
// or method of app or vol, and of no other type in the package, is an
// app's or a vol's internals wherever it appears.
func TestTheDaemonComposesComponentsAndKeepsNoAppOrVolumeInternals(t *testing.T) {
	if n := reflect.TypeOf(Daemon{}).NumField(); n > 15 {
		t.Errorf("Daemon has %d fields, more than 15: group the new one into a component or a lock's group (docs/architecture.md)", n)
	}

	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}

	// names[type] are the fields and methods each type of the package
	// declares.
	names := map[string]map[string]bool{}
	add := func(typ, name string) {
		if names[typ] == nil {
			names[typ] = map[string]bool{}
		}
		names[typ][name] = true
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						for _, n := range fld.Names {
							add(ts.Name.Name, n.Name)
						}
					}
				}
			case *ast.FuncDecl:
				if r := receiver(decl); r != "" {
					add(r, decl.Name.Name)
				}
			}
		}
	}
	internal := map[string]bool{}
	for _, typ := range []string{"app", "vol"} {
		for n := range names[typ] {
			internal[n] = true
		}
	}
	for typ, ns := range names {
		if typ == "app" || typ == "vol" {
			continue
		}
		for n := range ns {
			delete(internal, n) // shared with another type: not telling
		}
	}
	if len(internal) < 20 {
		t.Fatalf("only %d names tell an app's or a vol's internals apart; the check would prove little", len(internal))
	}

	var found []string
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || receiver(fn) != "Daemon" || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && internal[sel.Sel.Name] {
					found = append(found, fset.Position(sel.Pos()).String()+": Daemon."+fn.Name.Name+" uses ."+sel.Sel.Name)
				}
				return true
			})
		}
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("%s, an app's or a vol's own: move the work into the apps or volumes component", f)
	}
}

// receiver is the name of fn's receiver type, "" for a function.
func receiver(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
