// Package statuspage is the host's status page: what `GET /` on the
// metrics listener answers, an HTML page a person opens in a browser. It
// is rendered on the server from the daemon's report, the accepted
// document, its events and the last hour's samples, with no script and no
// external asset (the chart is inline SVG), so it works behind the same
// listener settings as /metrics and on a host with no way out.
//
// Build is pure: a Page from its inputs; Render writes one.
package statuspage

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// Window is how far back the charts reach.
const Window = time.Hour

// Point is one sample: when, its value (milliseconds for a wake, MiB for
// memory held), and the app it is of (a wake's).
type Point struct {
	At    time.Time
	Value float64
	App   string
}

// Event is the last thing that happened to an app, as `nibrunnerd events`
// prints it.
type Event struct {
	At      time.Time
	Verb    string
	Message string
}

// Input is what a page is built from.
type Input struct {
	Now    time.Time
	Report *reported.HostReportedState
	// Doc is the accepted document (nil before one): the hostnames.
	Doc *desired.HostDesiredState
	// Last is each app's last event, by app id.
	Last map[string]Event
	// Wakes are the wake latencies and Held the host's memory held, over
	// the last Window (older points are left out).
	Wakes, Held []Point
}

// Page is what Render draws.
type Page struct {
	Host        string
	ReportedAt  string
	State       string
	Message     string
	Held, Given string
	Apps        []App
	Volumes     []Volume
	Checkpoints []Checkpoint
	WakeChart   template.HTML
	HeldChart   template.HTML
}

// App is one row of the apps table.
type App struct {
	ID, State, Deployment string
	Hostnames             []string
	Held                  string
	Restarts              uint32
	LastWake              string
	LastEvent             string
}

// Volume is one row of the volumes table.
type Volume struct {
	ID, App, State, Size, Used string
}

// Checkpoint is one row of the checkpoints table.
type Checkpoint struct {
	ID, Volume, State, ReadyAt, Object string
}

// Build makes the page of in.
func Build(in Input) Page {
	p := Page{Host: "this host", State: "no report yet"}
	r := in.Report
	if r != nil {
		p.Host, p.State, p.Message = string(r.HostId), string(r.State), r.Message
		p.ReportedAt = r.ReportedAt.UTC().Format(time.RFC3339)
		if m := r.Memory; m != nil {
			p.Held, p.Given = mib(m.HeldMib), fmt.Sprintf("%s of %s", mib(m.GivenMib), mib(m.CapacityMib))
		}
	}
	hostnames := map[string][]string{}
	if in.Doc != nil {
		for _, i := range in.Doc.Instances {
			for _, h := range i.Hostnames {
				hostnames[string(i.AppId)] = append(hostnames[string(i.AppId)], string(h.Hostname))
			}
		}
	}
	wakes := lastWakes(in)
	if r != nil {
		for _, i := range r.Instances {
			a := App{ID: string(i.AppId), State: string(i.State), Deployment: string(i.DeploymentId),
				Hostnames: hostnames[string(i.AppId)], Restarts: i.RestartCount, Held: "-", LastWake: "-", LastEvent: "-"}
			if i.Memory != nil {
				a.Held = mib(i.Memory.HeldMib)
			}
			if d, ok := wakes[a.ID]; ok {
				a.LastWake = d
			}
			if e, ok := in.Last[a.ID]; ok {
				a.LastEvent = strings.TrimSpace(e.At.UTC().Format("15:04:05") + " " + e.Verb + " " + e.Message)
			}
			p.Apps = append(p.Apps, a)
		}
		for _, v := range r.Volumes {
			row := Volume{ID: string(v.VolumeId), App: string(v.AppId), State: string(v.State), Size: size(v.SizeBytes), Used: "-"}
			if v.Usage != nil {
				row.Used = size(v.Usage.UsedBytes)
			}
			p.Volumes = append(p.Volumes, row)
		}
		for _, c := range r.Checkpoints {
			row := Checkpoint{ID: string(c.CheckpointId), Volume: string(c.VolumeId), State: string(c.State), ReadyAt: "-", Object: string(c.ObjectKey)}
			if c.ReadyAt != nil {
				row.ReadyAt = c.ReadyAt.UTC().Format(time.RFC3339)
			}
			p.Checkpoints = append(p.Checkpoints, row)
		}
	}
	slices.SortFunc(p.Apps, func(a, b App) int { return strings.Compare(a.ID, b.ID) })
	from := in.Now.Add(-Window)
	p.WakeChart = Chart("wake latency (ms), last hour", recent(in.Wakes, from), from, in.Now)
	p.HeldChart = Chart("memory held (MiB), last hour", recent(in.Held, from), from, in.Now)
	return p
}

// lastWakes is, per app, its last wake's latency among in.Wakes.
func lastWakes(in Input) map[string]string {
	out := map[string]string{}
	last := map[string]time.Time{}
	for _, p := range in.Wakes {
		if p.App != "" && !p.At.Before(last[p.App]) {
			last[p.App], out[p.App] = p.At, trim(p.Value)+" ms"
		}
	}
	return out
}

func recent(ps []Point, from time.Time) []Point {
	var out []Point
	for _, p := range ps {
		if !p.At.Before(from) {
			out = append(out, p)
		}
	}
	return out
}

// maxDots is the most samples a chart marks one by one (a lone sample is
// otherwise a line of no length).
const maxDots = 200

// Chart is an inline SVG line chart of ps over [from, to], titled, with
// its largest value on the axis: no script, no external asset.
func Chart(title string, ps []Point, from, to time.Time) template.HTML {
	const w, h, pad = 600.0, 160.0, 30.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(title), int(w), int(h), int(w), int(h))
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#ccc"/>`, pad, pad/2, w-pad*1.5, h-pad*1.5)
	max := 0.0
	for _, p := range ps {
		max = math.Max(max, p.Value)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="11">%s</text>`, pad, pad/2-3, template.HTMLEscapeString(title))
	if len(ps) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%g" y="%g" font-size="12" fill="#888">no samples yet</text>`, w/2-40, h/2)
	} else {
		fmt.Fprintf(&b, `<text x="2" y="%g" font-size="10">%s</text>`, pad/2+10, trim(max))
		span := to.Sub(from).Seconds()
		if span <= 0 {
			span = 1
		}
		if max <= 0 {
			max = 1
		}
		var pts []string
		for _, p := range ps {
			x := pad + (w-pad*1.5)*p.At.Sub(from).Seconds()/span
			y := pad/2 + (h-pad*1.5)*(1-p.Value/max)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="#1f6feb" stroke-width="1.5" points="%s"/>`, strings.Join(pts, " "))
		if len(pts) <= maxDots {
			for _, p := range pts {
				x, y, _ := strings.Cut(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="#1f6feb"/>`, x, y)
			}
		}
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="10">-%d min</text><text x="%g" y="%g" font-size="10" text-anchor="end">now</text>`,
		pad, h-pad/2+10, int(to.Sub(from).Minutes()), w-pad/2, h-pad/2+10)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func trim(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func mib(v uint64) string { return fmt.Sprintf("%d MiB", v) }

func size(v uint64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(v)/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
	}
	return fmt.Sprintf("%d B", v)
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="10">
<title>nibrunnerd: {{.Host}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f4f4f4}
.state-running,.state-ready{color:#1a7f37}.state-failed{color:#cf222e}.state-idle,.state-sleeping{color:#8250df}
.message{color:#cf222e}
</style></head><body>
<h1>nibrunnerd on {{.Host}}</h1>
<p id="host">host <span class="state-{{.State}}">{{.State}}</span>{{if .ReportedAt}}, reported {{.ReportedAt}}{{end}}{{if .Held}}; memory held {{.Held}}, given {{.Given}}{{end}}. This page refreshes every 10 s.</p>
{{if .Message}}<p class="message">{{.Message}}</p>{{end}}
<h2>Apps</h2>
<table id="apps"><thead><tr><th>app</th><th>state</th><th>deployment</th><th>hostnames</th><th>memory held</th><th>restarts</th><th>last wake</th><th>last event</th></tr></thead><tbody>
{{range .Apps}}<tr class="app" data-app="{{.ID}}"><td>{{.ID}}</td><td class="state state-{{.State}}">{{.State}}</td><td>{{.Deployment}}</td><td>{{range $i, $h := .Hostnames}}{{if $i}}, {{end}}{{$h}}{{end}}</td><td>{{.Held}}</td><td>{{.Restarts}}</td><td>{{.LastWake}}</td><td>{{.LastEvent}}</td></tr>
{{else}}<tr><td colspan="8">no apps</td></tr>{{end}}</tbody></table>
<h2>Volumes</h2>
<table id="volumes"><thead><tr><th>volume</th><th>app</th><th>state</th><th>size</th><th>used</th></tr></thead><tbody>
{{range .Volumes}}<tr class="volume"><td>{{.ID}}</td><td>{{.App}}</td><td class="state-{{.State}}">{{.State}}</td><td>{{.Size}}</td><td>{{.Used}}</td></tr>
{{else}}<tr><td colspan="5">no volumes</td></tr>{{end}}</tbody></table>
<h2>Checkpoints</h2>
<table id="checkpoints"><thead><tr><th>checkpoint</th><th>volume</th><th>state</th><th>ready at</th><th>object</th></tr></thead><tbody>
{{range .Checkpoints}}<tr class="checkpoint"><td>{{.ID}}</td><td>{{.Volume}}</td><td>{{.State}}</td><td>{{.ReadyAt}}</td><td>{{.Object}}</td></tr>
{{else}}<tr><td colspan="5">no checkpoints</td></tr>{{end}}</tbody></table>
<h2>The last hour</h2>
<div id="charts">{{.WakeChart}}<br>{{.HeldChart}}</div>
</body></html>
`))

// Render writes p as an HTML page.
func Render(w io.Writer, p Page) error { return page.Execute(w, p) }
