// Command gendoc writes the configuration reference generated from the
// schema's struct tags: go run ./internal/gendoc OUTPUT.
package main

import (
	"fmt"
	"os"

	"alpnib.dev/alpage/config"
	"alpnib.dev/internal/atomicfile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc OUTPUT.md")
		os.Exit(2)
	}
	if err := atomicfile.WriteFile(os.Args[1], config.Markdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
