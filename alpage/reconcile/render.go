package reconcile

import (
	"fmt"
	"io"
	"strings"

	"alpnib.dev/internal/term"
)

// statusWidth pads every status to the longest word, so ids line up across
// sections and reports.
var statusWidth = func() int {
	w := 0
	for _, s := range statuses {
		w = max(w, len(s))
	}
	return w
}()

// Render writes the report as text: one block per section, each row
// `<status padded>  <name or ->  <id>[  detail]`, then a summary line.
func (r *Report) Render(w io.Writer, paint term.Painter) error {
	var b strings.Builder
	fmt.Fprintf(&b, "registry version %d\n", r.RegistryVersion)
	if r.QueriesUnverified {
		fmt.Fprintf(&b, "%s query answers were not verified (--no-verify-queries)\n", paint.Paint(term.Yellow, "warning:"))
	}
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "\n%s\n", s.Title)
		if len(s.Rows) == 0 && len(s.Warnings) == 0 {
			b.WriteString("  (nothing declared)\n")
		}
		for _, row := range s.Rows {
			pad := strings.Repeat(" ", statusWidth-len(row.Status))
			fmt.Fprintf(&b, "  %s%s  %s  %s", paint.Paint(row.Status.Color(), string(row.Status)), pad, row.Name, row.ID)
			if row.Detail != "" {
				b.WriteString("  " + row.Detail)
			}
			b.WriteByte('\n')
		}
		for _, warn := range s.Warnings {
			fmt.Fprintf(&b, "  %s %s\n", paint.Paint(term.Yellow, "warning:"), warn)
		}
	}
	r.writeVerdict(&b, paint, r.FailedReads, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeVerdict ends a rendering: the reads that failed, if any (the gate
// did not run), else the verdict line, followed by tail.
func (r *Report) writeVerdict(b *strings.Builder, paint term.Painter, failed []string, tail string) {
	if !r.Ran() {
		fmt.Fprintf(b, "\n%s\n", paint.Paint(term.Red, fmt.Sprintf("reconcile did not run: %d registry or governance read(s) failed:", len(r.FailedReads))))
		for _, f := range failed {
			fmt.Fprintf(b, "  %s\n", f)
		}
		return
	}
	verdict := paint.Paint(term.Green, "in sync")
	if r.Drift > 0 {
		verdict = paint.Paint(term.Red, fmt.Sprintf("%d drift", r.Drift))
	}
	fmt.Fprintf(b, "\nreconcile: %s, %d unknown (not drift%s)%s\n", verdict, r.Unknown, r.unknownSources(), tail)
}

// unknownSources is "; 2 AMD KDS, 1 node status or dashboard": what could
// not be read, per source, in a fixed order.
func (r *Report) unknownSources() string {
	var parts []string
	for _, s := range []ReadSource{ReadRegistry, ReadGovernance, ReadExplorer, ReadKDS, ReadNode} {
		if n := r.UnknownFrom[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}
