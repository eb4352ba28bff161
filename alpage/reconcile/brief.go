package reconcile

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"alpnib.dev/internal/term"
)

// maxListed is how many ids or names a rolled-up line names before it
// says how many more there are.
const maxListed = 5

// RenderBrief writes the report an operator reads at fleet scale: per
// section a count line, then only the rows that need a look (drift,
// unknown, unreachable); version drift that repeats is one line per
// (declared, live) pair; warnings said more than once are said once with
// a count; then the summary. An in-sync fleet is a screenful whatever its
// size. Render writes every row (--all), and the JSON is always complete.
func (r *Report) RenderBrief(w io.Writer, paint term.Painter) error {
	var b strings.Builder
	fmt.Fprintf(&b, "registry version %d\n", r.RegistryVersion)
	if r.QueriesUnverified {
		fmt.Fprintf(&b, "%s query answers were not verified (--no-verify-queries)\n", paint.Paint(term.Yellow, "warning:"))
	}
	b.WriteByte('\n')
	// Sections of one kind (a subnet's, an operator's nodes) that are
	// all in sync are one line together, where the kind has many.
	quiet := map[string][]Section{}
	for _, s := range r.Sections {
		if len(needsALook(s.Rows)) == 0 && len(s.Warnings) == 0 && len(s.Rows) > 0 {
			quiet[s.Kind] = append(quiet[s.Kind], s)
		}
	}
	said := map[string]bool{}
	for _, s := range r.Sections {
		if q := quiet[s.Kind]; len(q) > 1 && slices.ContainsFunc(q, func(x Section) bool { return x.Title == s.Title }) {
			if !said[s.Kind] {
				said[s.Kind] = true
				rows := 0
				for _, x := range q {
					rows += len(x.Rows)
				}
				fmt.Fprintf(&b, "%s %s: %s rows, all in sync\n", thousands(len(q)), kindPlural(s.Kind), thousands(rows))
			}
			continue
		}
		look := needsALook(s.Rows)
		fmt.Fprintf(&b, "%s: %s\n", s.Title, counted(len(s.Rows), len(s.Rows)-len(look)))
		rows, rolled := rollUp(look)
		for _, line := range rolled {
			fmt.Fprintf(&b, "  %s\n", paint.Paint(VersionMismatch.Color(), string(VersionMismatch))+"  "+line)
		}
		for _, row := range rows {
			pad := strings.Repeat(" ", statusWidth-len(row.Status))
			fmt.Fprintf(&b, "  %s%s  %s  %s", paint.Paint(row.Status.Color(), string(row.Status)), pad, row.Name, row.ID)
			if row.Detail != "" {
				b.WriteString("  " + row.Detail)
			}
			b.WriteByte('\n')
		}
		for _, warn := range collapse(s.Warnings) {
			fmt.Fprintf(&b, "  %s %s\n", paint.Paint(term.Yellow, "warning:"), warn)
		}
	}
	r.writeVerdict(&b, paint, collapse(r.FailedReads), "; every row with --all")
	_, err := io.WriteString(w, b.String())
	return err
}

// needsALook is the rows a person must read: drift, unknown, unreachable.
func needsALook(rows []Row) []Row {
	var out []Row
	for _, row := range rows {
		if row.Drift || row.Status == Unknown || row.Status == Unreachable {
			out = append(out, row)
		}
	}
	return out
}

// kindPlural names many sections of a kind: "subnets", "operators' nodes".
func kindPlural(kind string) string {
	switch kind {
	case SectionSubnet:
		return "subnets (membership and record)"
	case SectionNodes:
		return "operators (their nodes)"
	}
	return kind + " sections"
}

// counted is "1,447 rows, all in sync" or "37 rows, 35 in sync".
func counted(rows, ok int) string {
	switch {
	case rows == 0:
		return "nothing declared"
	case ok == rows:
		return thousands(rows) + " rows, all in sync"
	}
	return fmt.Sprintf("%s rows, %s in sync", thousands(rows), thousands(ok))
}

// rollUp folds the version-mismatch rows that share a (declared, live)
// pair into one line each, when more than one row shares it; the other
// rows come back as they were.
func rollUp(rows []Row) ([]Row, []string) {
	type pair struct{ declared, live string }
	groups := map[pair][]Row{}
	var order []pair
	for _, row := range rows {
		if row.Status != VersionMismatch || row.Declared == "" {
			continue
		}
		p := pair{row.Declared, row.Live}
		if _, seen := groups[p]; !seen {
			order = append(order, p)
		}
		groups[p] = append(groups[p], row)
	}
	var keep []Row
	var lines []string
	for _, row := range rows {
		if row.Status == VersionMismatch && row.Declared != "" && len(groups[pair{row.Declared, row.Live}]) > 1 {
			continue
		}
		keep = append(keep, row)
	}
	for _, p := range order {
		g := groups[p]
		if len(g) < 2 {
			continue
		}
		var subnets []string
		for _, row := range g {
			if s := orText(row.Subnet, "unassigned"); !slices.Contains(subnets, s) {
				subnets = append(subnets, s)
			}
		}
		slices.Sort(subnets)
		lines = append(lines, fmt.Sprintf("%s nodes declared %s run %s, in %s", thousands(len(g)), p.declared, p.live, listed(subnets, "subnet")))
	}
	return keep, lines
}

// listed names at most maxListed items and counts the rest: "subnets a,
// b, c" or "subnets a, b, c, d, e and 32 more".
func listed(items []string, noun string) string {
	if len(items) != 1 {
		noun += "s"
	}
	if len(items) <= maxListed {
		return noun + " " + strings.Join(items, ", ")
	}
	return fmt.Sprintf("%d %s: %s and %d more", len(items), noun, strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// collapse says a repeated line once, with how many times it was said.
func collapse(lines []string) []string {
	count := map[string]int{}
	var order []string
	for _, l := range lines {
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	out := make([]string, 0, len(order))
	for _, l := range order {
		if n := count[l]; n > 1 {
			l += fmt.Sprintf(" (×%d)", n)
		}
		out = append(out, l)
	}
	return out
}

// thousands writes n with comma separators, as the summary lines read.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
