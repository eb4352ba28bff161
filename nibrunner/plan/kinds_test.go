package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestEveryInstanceKindHasAName(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range append([]InstanceKind{NoAction}, InstanceKinds()...) {
		name := k.String()
		if name == "" || strings.HasPrefix(name, "InstanceKind(") || seen[name] {
			t.Errorf("instance kind %d has no name of its own (%q)", int(k), name)
		}
		seen[name] = true
	}
	if got := InstanceKind(99).String(); got != "InstanceKind(99)" {
		t.Errorf("an unknown kind says %q, want InstanceKind(99)", got)
	}
}

// instanceKindNames is the identifiers of the InstanceKind constants, read
// from plan.go, so that a kind added there is one the switches must name.
func instanceKindIdents(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "plan.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || len(g.Specs) == 0 {
			continue
		}
		if id, ok := g.Specs[0].(*ast.ValueSpec).Type.(*ast.Ident); !ok || id.Name != "InstanceKind" {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if n.IsExported() {
					names = append(names, n.Name)
				}
			}
		}
	}
	if len(names) != len(InstanceKinds())+1 {
		t.Fatalf("plan.go declares %d InstanceKind constants %v, want %d", len(names), names, len(InstanceKinds())+1)
	}
	return names
}

// Every switch over an instance action's kind, anywhere under nibrunner,
// names every kind and has no default: a new kind is then an edit the
// compiler and this test walk through, never a case that silently falls
// into another's branch.
func TestEverySwitchOverAnInstanceKindNamesEveryKind(t *testing.T) {
	kinds := instanceKindIdents(t)
	isKind := map[string]bool{}
	for _, k := range kinds {
		isKind[k] = true
	}
	switches := 0
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		local := f.Name.Name == "plan" && filepath.Base(filepath.Dir(path)) == "plan"
		alias := ""
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "alpnib.dev/nibrunner/plan" {
				alias = "plan"
				if im.Name != nil {
					alias = im.Name.Name
				}
			}
		}
		if !local && alias == "" {
			return nil
		}
		kindOf := func(x ast.Expr) string {
			switch x := x.(type) {
			case *ast.Ident:
				if local && isKind[x.Name] {
					return x.Name
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == alias && isKind[x.Sel.Name] {
					return x.Sel.Name
				}
			}
			return ""
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok || sw.Tag == nil {
				return true
			}
			named, hasDefault := map[string]bool{}, false
			for _, c := range sw.Body.List {
				cc := c.(*ast.CaseClause)
				if cc.List == nil {
					hasDefault = true
				}
				for _, x := range cc.List {
					if k := kindOf(x); k != "" {
						named[k] = true
					}
				}
			}
			if len(named) == 0 {
				return true
			}
			switches++
			var missing []string
			for _, k := range kinds {
				if !named[k] {
					missing = append(missing, k)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 || hasDefault {
				t.Errorf("%s: a switch over an instance kind must name every kind and have no default; it misses %v (default: %v)", fset.Position(sw.Pos()), missing, hasDefault)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if switches == 0 {
		t.Fatal("found no switch over an instance kind under nibrunner: the test no longer reads the daemon")
	}
}

// Every typed reason has a name, and a value beyond them says its type.
func TestEveryReasonHasAName(t *testing.T) {
	for _, names := range [][]string{jobWhyNames[:], admitWhyNames[:], restartSaysNames[:], wakeWhyNames[:]} {
		for i, n := range names {
			if n == "" || slices.Index(names, n) != i {
				t.Errorf("reason %d of %v has no name of its own", i, names)
			}
		}
	}
	if got := JobWhy(99).String(); got != "JobWhy(99)" {
		t.Errorf("JobWhy(99) says %q", got)
	}
	if got := AdmitWhy(WaitSlot).String(); got != "slot" {
		t.Errorf("WaitSlot says %q", got)
	}
}
