package scripts

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// ours are the programs this repository builds: the commands' folders, and
// the benchmark tools that are programs of their own.
func ours(t *testing.T) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	for _, glob := range []string{"../cmd/*/main.go", "../bench/*/main.go"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			m[filepath.Base(filepath.Dir(f))] = true
		}
	}
	return m
}

// everyCommand lists every external command the module's Go code and the
// scripts in scripts/ and bench/ run, and the shell functions the scripts
// define.
func everyCommand(t *testing.T) (uses []use, functions map[string]bool) {
	t.Helper()
	functions = map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		// nibrun-init runs inside the guest, on the guest image, not on the host
		if d.IsDir() && path == filepath.Join("..", "cmd", "nibrun-init") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found, err := goCommands(strings.TrimPrefix(path, "../"), src)
		uses = append(uses, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, glob := range []string{"../scripts/*.sh", "../bench/*.sh", "../.ci/run"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			found, fns := shellCommands(strings.TrimPrefix(f, "../"), string(src))
			uses = append(uses, found...)
			for _, fn := range fns {
				functions[fn] = true
			}
		}
	}
	return uses, functions
}

func readSetup(t *testing.T) (map[string]string, map[string]bool) {
	t.Helper()
	src, err := os.ReadFile("setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	debian, goTools := setupTable(string(src))
	if len(debian) == 0 {
		t.Fatal("scripts/setup.sh has no command table (declare -A need=( [cmd]=package … ))")
	}
	return debian, goTools
}

func TestEveryCommandTheCodeAndScriptsRunIsInSetupsTable(t *testing.T) {
	debian, goTools := readSetup(t)
	uses, functions := everyCommand(t)
	built := ours(t)
	missing := map[string][]string{}
	for _, u := range uses {
		// go and gofmt come with the Go toolchain the README asks for; a
		// path is one of this repository's scripts
		if debian[u.name] != "" || goTools[u.name] || functions[u.name] || built[u.name] || u.name == "go" || u.name == "gofmt" || strings.Contains(u.name, "/") {
			continue
		}
		missing[u.name] = append(missing[u.name], u.where)
	}
	var names []string
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s runs %q, which scripts/setup.sh's command table does not name: add [%s]=<its Debian package> to need=(…) (dpkg -S \"$(command -v %s)\" says which)",
			strings.Join(missing[n], ", "), n, n, n)
	}
	if len(uses) < 40 {
		t.Fatalf("found only %d uses of external commands; the scan is broken", len(uses))
	}
}

// The table's packages are the ones that really ship each command, where
// this machine has it: dpkg says which package owns the file.
func TestSetupsTableNamesThePackageThatShipsEachCommand(t *testing.T) {
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Skip("no dpkg: not a Debian machine")
	}
	debian, _ := readSetup(t)
	// one dpkg -S for every name of every command's file: dpkg prints
	// "package[, package]: path" for each it knows, and an error for the rest
	paths := map[string]string{} // a name dpkg may know -> the command
	var args []string
	for cmd := range debian {
		path, err := exec.LookPath(cmd)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/sbin"} {
				if _, err := os.Stat(filepath.Join(dir, cmd)); err == nil {
					path = filepath.Join(dir, cmd)
				}
			}
		}
		if path == "" {
			continue
		}
		for _, p := range candidates(path) {
			paths[p] = cmd
			args = append(args, p)
		}
	}
	out, _ := exec.Command(dpkg, append([]string{"-S"}, args...)...).Output()
	owners := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkgs, path, ok := strings.Cut(line, ": ")
		if !ok || paths[path] == "" || strings.HasPrefix(pkgs, "diversion by") {
			continue
		}
		for _, o := range strings.Split(pkgs, ", ") {
			owners[paths[path]] = append(owners[paths[path]], strings.Split(o, ":")[0])
		}
	}
	if len(owners) == 0 {
		t.Fatal("dpkg knows no command of setup.sh's table on this machine")
	}
	// a command installed by hand here, not by a package, has no owner
	for cmd, own := range owners {
		if !contains(own, debian[cmd]) && !bringsAny(debian[cmd], own) {
			t.Errorf("setup.sh says %s comes from %s, but dpkg says it is shipped by %s", cmd, debian[cmd], strings.Join(own, ", "))
		}
	}
}

// bringsAny says whether installing pkg installs one of owners: Debian
// ships some commands in a package the named one depends on (python3's
// binary is python3-minimal's).
func bringsAny(pkg string, owners []string) bool {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Pre-Depends},${Depends}", pkg).Output()
	if err != nil {
		return false
	}
	for _, dep := range strings.FieldsFunc(string(out), func(r rune) bool { return r == ',' || r == '|' }) {
		if name := strings.Fields(dep); len(name) > 0 && contains(owners, strings.Split(name[0], ":")[0]) {
			return true
		}
	}
	return false
}

// candidates are the names dpkg may know a command's file by: merged /usr
// puts /bin/x at /usr/bin/x, and alternatives link a name to another file.
func candidates(path string) []string {
	c := []string{path}
	if strings.HasPrefix(path, "/usr/") {
		c = append(c, strings.TrimPrefix(path, "/usr"))
	} else {
		c = append(c, "/usr"+path)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		c = append(c, candidates(real)...)
	}
	return c
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTheCommandScanFindsCommandsWhereverAScriptRunsThem(t *testing.T) {
	script := `#!/usr/bin/env bash
# a comment naming notacommand
set -euo pipefail
helper() { frob1 "$@"; }
x=$(frob2 --flag | frob3)
if ! frob4 -q; then echo "$(frob5)"; fi
for f in a b c; do frob6 "$f"; done
case $1 in
  a|b) frob7 ;;
  *) frob8 ;;
esac
exec timeout 5 frob9 2>&1 >/dev/null
cat <<EOF >out
notacommand either
EOF
bash -c 'frob10 && frob11'
need=([not]=apackage)
[ -x /usr/sbin/frob12 ] || /usr/sbin/frob13 "$x" | xargs -r -n1 frob14
helper
`
	uses, fns := shellCommands("t.sh", script)
	var got []string
	for _, u := range uses {
		got = append(got, u.name)
	}
	sort.Strings(got)
	want := []string{"bash", "cat", "frob1", "frob10", "frob11", "frob13", "frob14", "frob2", "frob3", "frob4", "frob5", "frob6", "frob7", "frob8", "frob9", "helper", "timeout", "xargs"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("commands:\n got %v\nwant %v", got, want)
	}
	if strings.Join(fns, " ") != "helper" {
		t.Errorf("functions: got %v, want [helper]", fns)
	}

	goSrc := `package p
import "os/exec"
func f() {
	exec.Command("gofrob1", "x")
	exec.CommandContext(ctx, "gofrob2")
	exec.LookPath("gofrob3")
	testenv.RequireCommand(t, "gofrob4", "gofrob5")
	exec.Command(name)
}`
	found, err := goCommands("p.go", []byte(goSrc))
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, u := range found {
		got = append(got, u.name)
	}
	if strings.Join(got, " ") != "gofrob1 gofrob2 gofrob3 gofrob4 gofrob5" {
		t.Errorf("Go commands: got %v", got)
	}
}

// essential are the packages of Debian's essential set: on every Debian
// machine, so the README need not name them.
var essential = set(`bash dash mawk grep sed findutils tar libc-bin coreutils`)

func TestTheReadmeNamesEveryPackageSetupInstalls(t *testing.T) {
	src, err := os.ReadFile("setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, prereq, ok := strings.Cut(string(readme), "**Prerequisites:**")
	prereq, _, _ = strings.Cut(prereq, "\n\n")
	if !ok {
		t.Fatal("README.md has no **Prerequisites:** paragraph")
	}
	words := set(strings.NewReplacer("`", " ", ",", " ", ";", " ", ":", " ").Replace(prereq))
	debian, _ := setupTable(string(src))
	for _, m := range regexp.MustCompile(`\[(/[^\]]+)\]=(\S+)`).FindAllStringSubmatch(string(src), -1) {
		debian[m[1]] = m[2]
	}
	for what, pkg := range debian {
		if !essential[pkg] && !words[pkg] {
			t.Errorf("setup.sh installs %s (for %s), but README.md's prerequisites do not name it", pkg, what)
		}
	}
}
