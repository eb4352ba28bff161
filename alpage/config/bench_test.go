package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/ic/principal"
)

// BenchmarkLoadAThousandNodeFleet loads a fleet of 1,000 nodes under 50
// operators in 10 subnets, spread over 11 files, with 100 membership
// proposals: every reference resolved, every rule checked, every id decoded.
func BenchmarkLoadAThousandNodeFleet(b *testing.B) {
	dir := b.TempDir()
	id := func(kind string, i int) string {
		return principal.SelfAuthenticating([]byte(fmt.Sprint(kind, i))).String()
	}
	var res strings.Builder
	res.WriteString(`node_provider "p" { id = "` + id("p", 0) + `" }` + "\n")
	res.WriteString(`data_center "dc" { id = "zh1" }` + "\n")
	res.WriteString(`guestos_version "current" {
  id = "2e921c9adfc71f3edc96a9eb5d85fc742e7d8a9f"
  default = true
}` + "\n")
	for s := 0; s < 10; s++ {
		fmt.Fprintf(&res, "subnet \"s%d\" { id = %q }\n", s, id("s", s))
	}
	for o := 0; o < 50; o++ {
		fmt.Fprintf(&res, "node_operator \"o%d\" {\n  id = %q\n  provider = node_provider.p.id\n  dc = data_center.dc.id\n}\n", o, id("o", o))
	}
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("resources.hcl", res.String())
	for f := 0; f < 10; f++ {
		var nodes strings.Builder
		for n := f * 100; n < (f+1)*100; n++ {
			fmt.Fprintf(&nodes, "node \"n%d\" {\n  id = %q\n  subnet = subnet.s%d.id\n  operator = node_operator.o%d.id\n  chip_id = %q\n}\n",
				n, id("n", n), n%10, n%50, strings.Repeat(fmt.Sprintf("%02x", n%256), 64))
		}
		write(fmt.Sprintf("resources/nodes%02d.hcl", f), nodes.String())
	}
	var props strings.Builder
	for p := 0; p < 100; p++ {
		fmt.Fprintf(&props, "proposal \"p%d\" {\n  kind = \"membership\"\n  title = \"Move a node\"\n  membership {\n    subnet_id = subnet.s%d.id\n    add { id = node.n%d.id }\n    remove { id = node.n%d.id }\n  }\n}\n", p, p%10, p, p+100)
	}
	write("proposals.hcl", props.String())
	path := filepath.Join(dir, "proposals.hcl")
	if _, err := Load(path); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
