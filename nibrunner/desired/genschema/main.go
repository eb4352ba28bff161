// Command genschema writes docs/desired-state.schema.json and
// docs/reported-state.schema.json from the Go types (run by go generate in
// nibrunner/desired). Tests in both packages fail when the files are stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func main() {
	docs := flag.String("docs", "docs", "the folder the schemas are written to")
	flag.Parse()
	for name, gen := range map[string]func() ([]byte, error){
		desired.SchemaFile:  desired.Schema,
		reported.SchemaFile: reported.Schema,
	} {
		data, err := gen()
		if err == nil {
			err = atomicfile.WriteFile(filepath.Join(*docs, name), data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "genschema: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
