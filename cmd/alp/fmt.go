package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/internal/atomicfile"
)

// fmtUnformatted is fmt -check's exit status when a file is not in the
// canonical format: Terraform's (docs/decisions.md), distinct from 1 (an
// error) and from 2 (alp's "flagged").
const fmtUnformatted = 3

func newFmtCmd(g *globals) *cobra.Command {
	var check, diff, list, write, recursive bool
	cmd := &cobra.Command{
		Use:   "fmt [-check] [-diff] [-recursive] [path...]",
		Short: "Rewrite configuration files in HCL's canonical format (offline, like terraform fmt)",
		Long: `fmt rewrites each configuration file in the canonical format of HCL's hclwrite,
as terraform fmt does, and lists the files it changed. A path may be a file, or a
folder: its *.hcl files and resources/*.hcl (with -recursive, every *.hcl under
it). With no path, the folder of --config.

-check writes nothing and lists the files that are not formatted, for CI; -diff
shows what would change. The flags take one dash or two (-check, --check).

Exit status: 0 every file is formatted (or was rewritten), 1 error (a file does
not parse: the error names file:line:column), 3 with -check, a file is not
formatted.`,
		// -check is Terraform's spelling (parseFlags).
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if help, err := parseFlags(cmd, args); help || err != nil {
				return err
			}
			paths := cmd.Flags().Args()
			if len(paths) == 0 {
				paths = []string{filepath.Dir(g.configPath)}
			}
			files, err := fmtFiles(paths, recursive)
			if err != nil {
				return err
			}
			if check {
				write = false
			}
			var unformatted []string
			for _, f := range files {
				changed, err := fmtFile(cmd.OutOrStdout(), f, g.limits(), write, diff)
				if err != nil {
					return err
				}
				if changed {
					unformatted = append(unformatted, f)
					if list {
						fmt.Fprintln(cmd.OutOrStdout(), f)
					}
				}
			}
			if check && len(unformatted) > 0 {
				return &exitError{code: fmtUnformatted, err: fmt.Errorf("%d file(s) not in the canonical format; run alp fmt to rewrite them", len(unformatted))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&check, "check", false, "write nothing; exit 3 and list the files when any is not formatted")
	f.BoolVar(&diff, "diff", false, "show what formatting changes, as a unified diff")
	f.BoolVar(&list, "list", true, "list the files whose formatting differs")
	f.BoolVar(&write, "write", true, "write the formatted files back (off with -check)")
	f.BoolVar(&recursive, "recursive", false, "also format the *.hcl files in every folder under a folder given")
	return cmd
}

// fmtFiles expands paths to the files fmt formats, sorted and each once.
func fmtFiles(paths []string, recursive bool) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("fmt: %w", err)
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		if recursive {
			err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				if !d.IsDir() && strings.HasSuffix(d.Name(), ".hcl") {
					add(path)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("fmt: %w", err)
			}
			continue
		}
		for _, pattern := range []string{filepath.Join(p, "*.hcl"), filepath.Join(p, "resources", "*.hcl")} {
			m, _ := filepath.Glob(pattern) // the patterns are well-formed
			for _, f := range m {
				add(f)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// fmtFile formats one file and reports whether its bytes differ from the
// canonical format; with write it rewrites the file atomically (its mode
// kept), with diff it writes a unified diff to w. A file that does not
// parse is an error naming its place, and is left as it is.
func fmtFile(w io.Writer, path string, lim config.Limits, write, diff bool) (bool, error) {
	f, diags := config.ParseFile(path, lim)
	if diags.HasErrors() || f == nil {
		var msgs []string
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				msgs = append(msgs, config.FormatDiagnostic(d))
			}
		}
		return false, fmt.Errorf("fmt: %s; fix it and run alp fmt again", strings.Join(msgs, "; "))
	}
	src := f.Bytes
	out := hclwrite.Format(src)
	if bytes.Equal(out, src) {
		return false, nil
	}
	if diff {
		fmt.Fprint(w, unifiedDiff(path, src, out))
	}
	if write {
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := atomicfile.WriteFile(path, out, mode); err != nil {
			return true, fmt.Errorf("fmt: write %s: %w", path, err)
		}
	}
	return true, nil
}
