// Package progress says how long work is getting on, on stderr: a line
// redrawn in place on a terminal (a bar when the total is known), and
// otherwise a plain line every few seconds, which a log or CI keeps
// readable. A nil writer is quiet (--quiet).
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"alpnib.dev/internal/term"
)

// Every is how often a plain line is written when the writer is not a
// terminal; Redraw how often a terminal's line is.
const (
	Every  = 5 * time.Second
	Redraw = 100 * time.Millisecond
)

// Meter counts units of one piece of work.
type Meter struct {
	w     io.Writer
	what  string
	unit  string
	total int64
	tty   bool
	now   func() time.Time

	mu    sync.Mutex
	n     int64     // guarded by mu
	start time.Time // guarded by mu
	last  time.Time // guarded by mu: the last line written
}

// New meters what (e.g. "building the guest kernel"), counted in unit
// ("files compiled"), out of total (0: not known) on w (nil: quiet).
func New(w io.Writer, what, unit string, total int64) *Meter {
	return newMeter(w, what, unit, total, term.IsTerminal(w), time.Now)
}

func newMeter(w io.Writer, what, unit string, total int64, tty bool, now func() time.Time) *Meter {
	t := now()
	return &Meter{w: w, what: what, unit: unit, total: total, tty: tty, now: now, start: t, last: t}
}

// Add counts n more units, and writes a line when one is due.
func (m *Meter) Add(n int64) {
	if m == nil || m.w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n += n
	t := m.now()
	every := Every
	if m.tty {
		every = Redraw
	}
	if t.Sub(m.last) < every {
		return
	}
	m.last = t
	m.write(t, false)
}

// SetTotal says how many units the work holds, once that is known (0:
// not known).
func (m *Meter) SetTotal(total int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = total
}

// Done writes the last line: how many, and how long it took.
func (m *Meter) Done() {
	if m == nil || m.w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(m.now(), true)
}

// write writes one line (mu held).
func (m *Meter) write(t time.Time, done bool) {
	took := t.Sub(m.start).Round(time.Second)
	count := fmt.Sprintf("%d %s", m.n, m.unit)
	if m.total > 0 {
		count = fmt.Sprintf("%d of %d %s", m.n, m.total, m.unit)
	}
	line := fmt.Sprintf("%s: %s, %s", m.what, count, took)
	if done {
		line = fmt.Sprintf("%s: done, %s in %s", m.what, count, took)
	}
	if !m.tty {
		fmt.Fprintln(m.w, line)
		return
	}
	if m.total > 0 {
		const width = 30
		filled := int(min(m.n, m.total) * width / m.total)
		line = fmt.Sprintf("%s [%s%s] %d%%", line, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), min(m.n, m.total)*100/m.total)
	}
	end := ""
	if done {
		end = "\n"
	}
	// \r and erase-to-end-of-line redraw the line in place.
	fmt.Fprintf(m.w, "\r%s\x1b[K%s", line, end)
}
