package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/nns"
	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/term"
)

// guestosTimeout bounds the reads of `alp guestos sync`.
const guestosTimeout = 2 * time.Minute

func newGuestosCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "guestos",
		Short: "Manage the declared GuestOS versions",
	}
	cmd.AddCommand(newGuestosSyncCmd(g))
	return cmd
}

func newGuestosSyncCmd(g *globals) *cobra.Command {
	var (
		output string
		live   liveFlags
	)
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Write the NNS elected GuestOS versions as resources/guestos.hcl",
		Long: `guestos sync reads the elected GuestOS versions (the registry's
replica_version_<id> records) and their release names (the ICP dashboard's
executed election proposals) and writes resources/guestos.hcl beside the
config: one guestos_version block per elected version, named and labelled
with its release name.

A version the file already declares keeps its block name, so references to
it keep resolving, and its default = true. A version no longer elected is
dropped unless it is the default or a node or proposal still references it.
Versions declared in other resource files are left where they are. The file
is written atomically and only when it changes, so running sync twice
changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			dir := filepath.Dir(g.configPath)
			path := filepath.Join(dir, "resources", "guestos.hcl")
			old, err := readGuestosFile(path, g.limits())
			if err != nil {
				return err
			}
			cfg, refs, cfgErr := guestosContext(g.configPath, dir, g.limits())
			if cfgErr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; syncing without knowing what references each version\n", cfgErr)
			}
			a, _, err := g.readAgent(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), guestosTimeout)
			defer cancel()
			elected, err := electedFromCopy(ctx, a, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			elections, err := live.dashboard().Elections(ctx)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: release names unavailable (%v); keeping the labels the file has\n", err)
			}
			elsewhere := map[string]declaredAt{}
			if cfg != nil {
				for _, v := range cfg.GuestOSVersions {
					if filepath.Clean(v.Range.Filename) != filepath.Clean(path) {
						elsewhere[v.ID] = declaredAt{Name: v.Name, Where: fmt.Sprintf("%s:%d", v.Range.Filename, v.Range.Start.Line)}
					}
				}
			}
			res := syncGuestos(old, elected, elections, refs, elsewhere)
			content := renderGuestos(res.Blocks)
			prev, readErr := os.ReadFile(path)
			res.Path, res.Changed = path, !bytes.Equal(prev, content)
			if errors.Is(readErr, os.ErrNotExist) && !res.declares() {
				// Nothing to declare: do not create an empty file.
				res.Changed, res.Absent = false, true
			}
			if res.Changed {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return fmt.Errorf("guestos sync: %w", err)
				}
				if err := atomicfile.WriteFile(path, content, 0o644); err != nil {
					return fmt.Errorf("guestos sync: %w", err)
				}
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			return renderSafe(cmd.OutOrStdout(), func(w io.Writer, paint term.Painter) error { return renderGuestosSync(w, paint, res) })
		},
	}
	outputFlag(cmd, &output)
	live.register(cmd)
	return cmd
}

// guestosBlock is one guestos_version block of resources/guestos.hcl.
type guestosBlock struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Label   string `json:"label,omitempty"`
	Default bool   `json:"default,omitempty"`
	// Status is what sync did: added, kept, or removed; Why says why a
	// version no longer elected was kept or where another file declares it.
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
}

// guestosSync is the outcome of `alp guestos sync`, and its JSON form.
type guestosSync struct {
	Path    string `json:"path"`
	Changed bool   `json:"changed"`
	// Absent is set when the file does not exist and was not written,
	// since another resource file declares every elected version.
	Absent bool           `json:"absent,omitempty"`
	Blocks []guestosBlock `json:"versions"`
}

// declaredAt is a guestos_version block of another resource file: its
// name and file:line.
type declaredAt struct{ Name, Where string }

// declares reports whether the synced file holds any block.
func (s guestosSync) declares() bool {
	for _, b := range s.Blocks {
		if b.Status == "kept" || b.Status == "added" {
			return true
		}
	}
	return false
}

// readGuestosFile reads the blocks an existing guestos.hcl declares; a
// missing file declares none.
func readGuestosFile(path string, lim config.Limits) ([]guestosBlock, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	f, diags := config.ParseFile(path, lim)
	if diags.HasErrors() {
		return nil, fmt.Errorf("guestos sync: %w", &config.Error{Diagnostics: diags})
	}
	var out []guestosBlock
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "guestos_version" || len(b.Labels) != 1 {
			return nil, fmt.Errorf("guestos sync: %s: only guestos_version blocks belong in this file (it is rewritten)", b.DefRange())
		}
		blk := guestosBlock{Name: b.Labels[0]}
		for name, attr := range b.Body.Attributes {
			v, diags := attr.Expr.Value(nil)
			if diags.HasErrors() {
				return nil, fmt.Errorf("guestos sync: %s", diags.Error())
			}
			switch {
			case name == "id" && v.Type() == cty.String:
				blk.ID = v.AsString()
			case name == "label" && v.Type() == cty.String:
				blk.Label = v.AsString()
			case name == "default" && v.Type() == cty.Bool:
				blk.Default = v.True()
			default:
				return nil, fmt.Errorf("guestos sync: %s: unexpected attribute %s", attr.SrcRange, name)
			}
		}
		out = append(out, blk)
	}
	return out, nil
}

// guestosContext loads the config to learn which version ids nodes and
// proposals reference; cfg is nil when it does not load.
func guestosContext(configPath, dir string, lim config.Limits) (*config.Config, map[string]string, error) {
	var (
		cfg *config.Config
		err error
	)
	if _, serr := os.Stat(configPath); serr == nil {
		cfg, err = config.LoadWith(configPath, lim)
	} else {
		cfg, err = config.LoadResourcesWith(dir, lim)
	}
	if err != nil {
		return nil, nil, err
	}
	refs := map[string]string{}
	for _, n := range cfg.Nodes {
		if n.GuestOSVersion != "" && n.GuestOSVersion != "none" {
			refs[n.GuestOSVersion] = "node " + n.Name + " references it"
		}
	}
	for _, p := range cfg.Proposals {
		if d, ok := p.Body.(*kinds.DeployGuestOS); ok {
			refs[d.ReplicaVersionID] = "proposal " + p.Name + " references it"
		}
	}
	return cfg, refs, nil
}

// electedVersions lists the versions the NNS elected: every
// replica_version_<id> record present, the fact reconcile, preflight and
// the dry run also go by.
func electedVersions(ctx context.Context, reg nns.RegistryClient) ([]string, error) {
	ids, err := reg.ElectedVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("guestos sync: read the elected versions: %w", err)
	}
	return ids, nil
}

// syncGuestos decides the new blocks (pure): every elected version not
// declared elsewhere, named as before or after its release; every old
// block no longer elected dropped unless it is the default or referenced.
// Kept blocks come first in their old order, then new ones by release name.
func syncGuestos(old []guestosBlock, elected []string, elections []source.Election, refs map[string]string, elsewhere map[string]declaredAt) guestosSync {
	release := map[string]string{}
	for _, e := range elections {
		release[e.VersionID] = e.Release
	}
	isElected := map[string]bool{}
	for _, id := range elected {
		isElected[id] = true
	}
	var res guestosSync
	taken := map[string]bool{}
	have := map[string]bool{}
	for _, b := range old {
		have[b.ID] = true
		if r := release[b.ID]; r != "" {
			b.Label = r
		}
		switch {
		case isElected[b.ID]:
			b.Status = "kept"
		case b.Default:
			b.Status, b.Why = "kept", "no longer elected; kept because it is the default"
		case refs[b.ID] != "":
			b.Status, b.Why = "kept", "no longer elected; kept because "+refs[b.ID]
		default:
			b.Status, b.Why = "removed", "no longer elected"
		}
		if b.Status == "kept" {
			taken[b.Name] = true
		}
		res.Blocks = append(res.Blocks, b)
	}
	var added []guestosBlock
	for _, id := range elected {
		if have[id] {
			continue
		}
		if at, ok := elsewhere[id]; ok {
			res.Blocks = append(res.Blocks, guestosBlock{Name: at.Name, ID: id, Status: "elsewhere", Why: "declared at " + at.Where})
			continue
		}
		added = append(added, guestosBlock{ID: id, Label: release[id], Status: "added"})
	}
	sort.Slice(added, func(i, j int) bool {
		if (added[i].Label == "") != (added[j].Label == "") {
			return added[i].Label != ""
		}
		if added[i].Label != added[j].Label {
			return added[i].Label < added[j].Label
		}
		return added[i].ID < added[j].ID
	})
	for _, b := range added {
		b.Name = blockName(b, taken)
		taken[b.Name] = true
		res.Blocks = append(res.Blocks, b)
	}
	return res
}

var notIdent = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// blockName names a new block after its release (an HCL identifier), else
// after its id, adding the id's start on a clash.
func blockName(b guestosBlock, taken map[string]bool) string {
	name := notIdent.ReplaceAllString(b.Label, "_")
	if name == "" || !(name[0] >= 'A' && name[0] <= 'Z' || name[0] >= 'a' && name[0] <= 'z') {
		name = "v_" + b.ID[:min(8, len(b.ID))]
	}
	if taken[name] {
		name += "_" + b.ID[:min(8, len(b.ID))]
	}
	return name
}

const guestosHeader = `# GuestOS versions elected by the NNS, written by ` + "`alp guestos sync`" + ` from the registry's
# replica_version records, with release names from the ICP dashboard (third party).
# Sync rewrites this file: set default = true here and it is kept; other edits are not.
`

// renderGuestos writes the kept and added blocks, formatted like hclfmt.
func renderGuestos(blocks []guestosBlock) []byte {
	var b strings.Builder
	b.WriteString(guestosHeader)
	for _, blk := range blocks {
		if blk.Status != "kept" && blk.Status != "added" {
			continue
		}
		b.WriteString("\n")
		if strings.HasPrefix(blk.Why, "no longer elected") {
			fmt.Fprintf(&b, "# %s\n", blk.Why)
		}
		fmt.Fprintf(&b, "guestos_version %q {\n  id = %q\n", blk.Name, blk.ID)
		if blk.Label != "" {
			fmt.Fprintf(&b, "  label = %q\n", blk.Label)
		}
		if blk.Default {
			b.WriteString("  default = true\n")
		}
		b.WriteString("}\n")
	}
	return hclwrite.Format([]byte(b.String()))
}

func renderGuestosSync(w io.Writer, paint term.Painter, res guestosSync) error {
	for _, b := range res.Blocks {
		name := b.Name
		if name == "" {
			name = "-"
		}
		line := fmt.Sprintf("%-9s %s  %s", b.Status, name, b.ID)
		if b.Label != "" && b.Label != b.Name {
			line += "  " + b.Label
		}
		if b.Default {
			line += "  [default]"
		}
		if b.Why != "" {
			line += "  (" + b.Why + ")"
		}
		color := term.None
		switch b.Status {
		case "added":
			color = term.Green
		case "removed":
			color = term.Yellow
		}
		fmt.Fprintln(w, paint.Paint(color, line))
	}
	what := "unchanged"
	switch {
	case res.Changed:
		what = "written"
	case res.Absent:
		what = "not written: another resource file declares every elected version"
	}
	_, err := fmt.Fprintf(w, "%s %s\n", res.Path, what)
	return err
}
