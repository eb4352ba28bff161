package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func TestThePageShowsEveryAppItsHostnamesLastWakeAndEvent(t *testing.T) {
	in := Input{
		Now: t0,
		Report: &reported.HostReportedState{HostId: "host-a", State: "ready", ReportedAt: t0,
			Memory: &reported.HostMemory{GivenMib: 384, HeldMib: 40, CapacityMib: 4096},
			Instances: []reported.Instance{
				{AppId: "web", DeploymentId: "web-1", State: "running", RestartCount: 2, Memory: &reported.Memory{GivenMib: 128, HeldMib: 30}},
				{AppId: "api", DeploymentId: "api-3", State: "idle"},
			},
			Volumes:     []reported.Volume{{VolumeId: "web-data", AppId: "web", State: "ready", SizeBytes: 64 << 20}},
			Checkpoints: []reported.Checkpoint{{CheckpointId: "c1", VolumeId: "web-data", State: "ready", ObjectKey: "checkpoints/c1"}},
		},
		Doc: &desired.HostDesiredState{Instances: []desired.DesiredInstance{
			{AppId: "web", Hostnames: []desired.AppHostname{{Hostname: "web.example.net"}, {Hostname: "www.example.net"}}}}},
		Last:  map[string]Event{"api": {At: t0.Add(-time.Minute), Verb: "slept", Message: "idle 5m0s"}},
		Wakes: []Point{{At: t0.Add(-2 * time.Hour), Value: 999, App: "web"}, {At: t0.Add(-10 * time.Minute), Value: 120, App: "web"}, {At: t0.Add(-time.Minute), Value: 85.5, App: "web"}},
		Held:  []Point{{At: t0.Add(-30 * time.Minute), Value: 20}, {At: t0, Value: 40}},
	}
	p := Build(in)
	if len(p.Apps) != 2 || p.Apps[0].ID != "api" || p.Apps[1].ID != "web" {
		t.Fatalf("apps: %+v", p.Apps)
	}
	web, api := p.Apps[1], p.Apps[0]
	if web.Held != "30 MiB" || web.Restarts != 2 || web.LastWake != "85.5 ms" || strings.Join(web.Hostnames, ",") != "web.example.net,www.example.net" {
		t.Errorf("web: %+v", web)
	}
	if api.LastEvent != "11:59:00 slept idle 5m0s" || api.Held != "-" || api.LastWake != "-" {
		t.Errorf("api: %+v", api)
	}
	// The wake two hours ago is outside the chart's hour.
	chart := string(p.WakeChart)
	points := chart[strings.Index(chart, `points="`)+8:]
	points = points[:strings.Index(points, `"`)]
	if strings.Contains(chart, "999") || len(strings.Fields(points)) != 2 {
		t.Errorf("wake chart: %s", p.WakeChart)
	}
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`<tr class="app" data-app="web">`, `class="state state-idle">idle<`, "web.example.net, www.example.net",
		`<svg class="chart"`, `<polyline class="series"`, "checkpoints/c1", "64.0 MiB", "memory held 40 MiB, given 384 MiB of 4096 MiB"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// What a tenant names is text on the page, never markup.
func TestATenantsNamesAreEscaped(t *testing.T) {
	p := Build(Input{Now: t0, Report: &reported.HostReportedState{Instances: []reported.Instance{{AppId: "<script>alert(1)</script>", State: "running"}}},
		Last: map[string]Event{"<script>alert(1)</script>": {Verb: "failed", Message: `<img src=x onerror=alert(1)>`}}})
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), "<img") {
		t.Fatalf("unescaped:\n%s", b.String())
	}
}

func TestAnEmptyChartSaysSoAndAPageWithoutAReportStillRenders(t *testing.T) {
	p := Build(Input{Now: t0})
	if !strings.Contains(string(p.HeldChart), "no samples yet") || p.State != "no report yet" {
		t.Fatalf("%+v", p)
	}
	if err := Render(&bytes.Buffer{}, p); err != nil {
		t.Fatal(err)
	}
}

func TestHistoryKeepsTheLastHourOnly(t *testing.T) {
	var h History
	h.Held(t0, 1)
	h.Held(t0.Add(30*time.Minute), 2)
	h.Held(t0.Add(61*time.Minute), 3)
	h.Wake("web", t0.Add(61*time.Minute), 1500*time.Microsecond)
	wakes, held := h.Points()
	if len(held) != 2 || held[0].Value != 2 || len(wakes) != 1 || wakes[0].Value != 1.5 || wakes[0].App != "web" {
		t.Fatalf("wakes %+v held %+v", wakes, held)
	}
}
