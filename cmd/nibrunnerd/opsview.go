package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"alpnib.dev/internal/term"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/reported"
)

// The operator's views of the report: pure functions from what the daemon
// said (and the time now) to rows and lines, so they are tested with
// tables and `--output json` prints the same rows.

// stateColor is the one place an instance state gets its colour.
func stateColor(s reported.InstanceState) term.Color {
	switch s {
	case reported.InstanceRunning:
		return term.Green
	case reported.InstanceFailed, reported.InstanceUnhealthy:
		return term.Red
	case reported.InstancePending, reported.InstanceStarting, reported.InstanceStopping:
		return term.Yellow
	}
	return term.None
}

// psRow is one app in `nibrunnerd ps`.
type psRow struct {
	AppId        string                 `json:"appId"`
	State        reported.InstanceState `json:"state"`
	DeploymentId string                 `json:"deploymentId"`
	HostPort     uint16                 `json:"hostPort,omitempty"`
	StartedAt    *time.Time             `json:"startedAt,omitempty"`
	// UptimeSeconds is how long its guest has been up, when it is.
	UptimeSeconds    int64  `json:"uptimeSeconds,omitempty"`
	MemoryUsedBytes  uint64 `json:"memoryUsedBytes,omitempty"`
	MemoryTotalBytes uint64 `json:"memoryTotalBytes,omitempty"`
	Message          string `json:"message,omitempty"`
}

// psRows is every app of the report, in its order.
func psRows(r *reported.HostReportedState, now time.Time) []psRow {
	rows := make([]psRow, 0, len(r.Instances))
	for _, in := range r.Instances {
		row := psRow{AppId: string(in.AppId), State: in.State, DeploymentId: string(in.DeploymentId),
			HostPort: in.HostPort, StartedAt: in.StartedAt, Message: in.Message}
		if in.StartedAt != nil && now.After(*in.StartedAt) {
			row.UptimeSeconds = int64(now.Sub(*in.StartedAt) / time.Second)
		}
		if c := in.Compute; c != nil {
			row.MemoryUsedBytes, row.MemoryTotalBytes = c.MemoryUsedBytes, c.MemoryTotalBytes
		}
		rows = append(rows, row)
	}
	return rows
}

// renderPS writes the rows as an aligned table.
func renderPS(w io.Writer, p term.Painter, host string, rows []psRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "no apps on %s\n", host)
		return err
	}
	cells := [][]term.Cell{cellsOf("APP", "STATE", "DEPLOYMENT", "PORT", "UPTIME", "MEMORY", "MESSAGE")}
	for _, r := range rows {
		port, up, mem := "-", "-", "-"
		if r.HostPort != 0 {
			port = fmt.Sprint(r.HostPort)
		}
		if r.StartedAt != nil {
			up = duration(time.Duration(r.UptimeSeconds) * time.Second)
		}
		if r.MemoryTotalBytes != 0 {
			mem = fmt.Sprintf("%s/%s", bytesIEC(r.MemoryUsedBytes), bytesIEC(r.MemoryTotalBytes))
		}
		row := cellsOf(r.AppId, "", r.DeploymentId, port, up, mem, r.Message)
		row[1] = term.Cell{Text: string(r.State), Color: stateColor(r.State)}
		cells = append(cells, row)
	}
	return term.WriteTable(w, p, cells)
}

func cellsOf(texts ...string) []term.Cell {
	out := make([]term.Cell, len(texts))
	for i, t := range texts {
		out[i] = term.PlainCell(t)
	}
	return out
}

// renderStatus writes one app's whole report, a field a line.
func renderStatus(w io.Writer, p term.Painter, s control.AppStatus, now time.Time) {
	in := s.Instance
	fmt.Fprintf(w, "%s  %s  deployment %s  (reported by %s %s ago)\n", in.AppId,
		p.Paint(stateColor(in.State), string(in.State)), in.DeploymentId, s.HostId, duration(now.Sub(s.ReportedAt)))
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "  %-13s %s\n", name, value)
		}
	}
	field("message", in.Message)
	if in.HostPort != 0 {
		field("host port", fmt.Sprint(in.HostPort))
	}
	field("guest ipv4", in.GuestIpv4)
	field("started", when(in.StartedAt, now))
	field("last healthy", when(in.LastHealthyAt, now))
	field("converged", when(in.ConvergedAt, now))
	field("restarts", fmt.Sprint(in.RestartCount))
	if in.LastExitCode != nil {
		field("last exit", fmt.Sprint(*in.LastExitCode))
	}
	if c := in.Compute; c != nil {
		field("memory", fmt.Sprintf("%s used of %s", bytesIEC(c.MemoryUsedBytes), bytesIEC(c.MemoryTotalBytes)))
		field("cpu share", fmt.Sprintf("%.1f%%", c.CpuShare*100))
	}
	if m := in.Meters; m != nil {
		field("meters", fmt.Sprintf("running %s, idle %s, cpu %s, rx %s, tx %s",
			duration(time.Duration(m.RunningMs)*time.Millisecond), duration(time.Duration(m.IdleMs)*time.Millisecond),
			duration(time.Duration(m.CpuMs)*time.Millisecond), bytesIEC(m.RxBytes), bytesIEC(m.TxBytes)))
	}
	for i, l := range in.LayerDigests {
		field(map[bool]string{true: "layers"}[i == 0], string(l))
	}
	for _, v := range s.Volumes {
		line := fmt.Sprintf("volume %s  %s  %s", v.VolumeId, v.State, bytesIEC(v.SizeBytes))
		if v.Usage != nil {
			line += fmt.Sprintf(", %s used of %s", bytesIEC(v.Usage.UsedBytes), bytesIEC(v.Usage.TotalBytes))
		}
		if v.DevicePath != "" {
			line += "  " + v.DevicePath
		}
		fmt.Fprintln(w, line)
		field("message", v.Message)
	}
	for _, c := range s.Checkpoints {
		line := fmt.Sprintf("checkpoint %s  %s", c.CheckpointId, c.State)
		if c.ReadyAt != nil {
			line += "  ready " + when(c.ReadyAt, now)
		}
		fmt.Fprintln(w, line)
		field("reference", c.Reference)
		field("message", c.Message)
	}
	for _, e := range s.Exports {
		line := fmt.Sprintf("export %s  %s", e.ExportId, e.State)
		if e.SizeBytes != 0 {
			line += "  " + bytesIEC(e.SizeBytes)
		}
		if e.ReadyAt != nil {
			line += "  ready " + when(e.ReadyAt, now)
		}
		fmt.Fprintln(w, line)
		field("message", e.Message)
	}
}

// eventLine is one event as a person reads it.
func eventLine(p term.Painter, e control.Event) string {
	s := fmt.Sprintf("%s  %-10s %-16s %s", e.At.UTC().Format("15:04:05"), e.Subject, e.ID, paintVerb(p, e.Verb))
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf("  %s → %s", orDash(e.From), orDash(e.To))
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return strings.TrimRight(s, " ")
}

// paintVerb pads the verb to its column, then paints it.
func paintVerb(p term.Painter, v control.Verb) string {
	pad := strings.Repeat(" ", max(0, 9-len(v)))
	switch v {
	case control.VerbFailed, control.VerbUnhealthy, control.VerbRefused:
		return p.Paint(term.Red, string(v)) + pad
	case control.VerbStarted, control.VerbWoke, control.VerbRecovered, control.VerbAccepted:
		return p.Paint(term.Green, string(v)) + pad
	}
	return string(v) + pad
}

// logLine is one line of an app's log, named for where it came from.
func logLine(l control.LogLine) string { return fmt.Sprintf("%-7s | %s", l.Source, l.Line) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when is a moment as a person reads it: the time and how long ago.
func when(t *time.Time, now time.Time) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), duration(now.Sub(*t)))
}

// duration is d in its two largest units: 45s, 3m12s, 2h05m, 4d03h.
func duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		if d < time.Second && d > 0 {
			return d.Round(time.Millisecond).String()
		}
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// bytesIEC is n in binary units: 512 B, 61.2 MiB.
func bytesIEC(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}
