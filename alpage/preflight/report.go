// Package preflight checks a declared proposal against live state before it
// is submitted: does it change anything, will the registry accept it, does
// it do something the registry would silently skip or regret. Each kind
// (alpage/kinds) fetches the facts of its own type through the Fetcher,
// which reads the registry, governance, the registry explorer and the ICP
// dashboard at one registry version, and its checks are a pure function of
// those facts, so they are tested with tables. `alp plan` prints the Report; `alp apply` runs the same checks
// before it submits.
package preflight

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/internal/term"
)

// Severity is how much a single check matters.
type Severity = kinds.Severity

// The severities, mildest first.
const (
	OK      = kinds.OK
	Note    = kinds.Note
	Warning = kinds.Warning
	Flagged = kinds.Flagged
	Refused = kinds.Refused
)

// Verdict is the outcome for a whole proposal.
type Verdict string

// The verdicts: ready to submit, submitting would change nothing, a person
// should look first (exit 2), or the NNS would reject it (exit 2).
const (
	VerdictReady   Verdict = "ready"
	VerdictNoOp    Verdict = "no-op"
	VerdictFlagged Verdict = "flagged"
	VerdictRefused Verdict = "refused"
)

// Color is the one place a status word's colour is decided.
func Color(word string) term.Color {
	switch word {
	case string(OK), string(VerdictReady):
		return term.Green
	case string(Note):
		return term.Dim
	case string(Warning), string(VerdictNoOp):
		return term.Yellow
	case string(Flagged), string(Refused):
		return term.Red
	}
	return term.None
}

// Check is one finding, phrased as a sentence a person can act on.
type Check = kinds.Check

// Report is the preflight of one proposal, and its JSON form.
type Report struct {
	Name          string  `json:"name"`
	Kind          string  `json:"kind"`
	PayloadSHA256 string  `json:"payload_sha256"`
	Verdict       Verdict `json:"verdict"`
	// RegistryVersion is the registry's latest version the live state was
	// read at (what a plan file pins).
	RegistryVersion uint64  `json:"registry_version"`
	Checks          []Check `json:"checks"`
	// Parts is update_subnet's field-by-field table: what the payload
	// sends of each field the registry replaces whole, and what the live
	// record carries beyond it.
	Parts []proposal.Part `json:"payload_fields,omitempty"`
}

// Blocking reports whether the verdict needs a person (flagged) or stops
// the proposal (refused): `alp plan` exits 2 for either.
func (r Report) Blocking() bool { return r.Verdict == VerdictFlagged || r.Verdict == VerdictRefused }

// verdict folds the checks: any refused → refused, any flagged → flagged,
// else no-op when the proposal changes nothing, else ready.
func verdict(checks []Check, noop bool) Verdict {
	worst := OK
	for _, c := range checks {
		if rank(c.Severity) > rank(worst) {
			worst = c.Severity
		}
	}
	switch {
	case worst == Refused:
		return VerdictRefused
	case worst == Flagged:
		return VerdictFlagged
	case noop:
		return VerdictNoOp
	}
	return VerdictReady
}

func rank(s Severity) int {
	switch s {
	case Note:
		return 1
	case Warning:
		return 2
	case Flagged:
		return 3
	case Refused:
		return 4
	}
	return 0
}

// Render writes the report for a person: a heading with the verdict, then
// one line per check with its severity word painted.
func (r Report) Render(w io.Writer, paint term.Painter) {
	fmt.Fprintf(w, "%s (%s): %s\n", r.Name, r.Kind, paint.Paint(Color(string(r.Verdict)), string(r.Verdict)))
	if r.PayloadSHA256 != "" {
		fmt.Fprintf(w, "  payload sha256 %s, registry version %d\n", r.PayloadSHA256, r.RegistryVersion)
	}
	for _, c := range r.Checks {
		word := fmt.Sprintf("%-8s", c.Severity)
		line := c.Message
		if c.At != "" {
			line = c.At + ": " + line
		}
		if c.Source != "" {
			line += " [" + c.Source + "]"
		}
		fmt.Fprintf(w, "  %s %s\n", paint.Paint(Color(string(c.Severity)), word), line)
	}
	renderParts(w, r.Parts)
}

// renderParts writes the field-by-field table, columns aligned.
func renderParts(w io.Writer, parts []proposal.Part) {
	if len(parts) == 0 {
		return
	}
	fmt.Fprintln(w, "  payload, field by field (features and resource_limits are replaced whole):")
	rows := [][4]string{{"field", "live", "sends", ""}}
	for _, p := range parts {
		rows = append(rows, [4]string{p.Field, p.Live, p.Sends, string(p.How)})
	}
	var width [3]int
	for _, r := range rows {
		for i := range width {
			width[i] = max(width[i], utf8.RuneCountInString(r[i]))
		}
	}
	for _, r := range rows {
		line := fmt.Sprintf("    %-*s  %-*s  %-*s  %s", width[0], r[0], width[1], r[1], width[2], r[2], r[3])
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}
