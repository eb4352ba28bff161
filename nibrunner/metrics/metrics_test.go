package metrics

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/vmm"
)

// scrape serves m on loopback, GETs /metrics in the text format and
// parses it with Prometheus's own parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	s, err := m.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr().String()+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape does not parse as the Prometheus text format: %v", err)
	}
	return fams
}

// value is the value of the series of family name with labels (pairs).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
next:
	for _, s := range f.Metric {
		got := map[string]string{}
		for _, l := range s.Label {
			got[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case s.Counter != nil:
			return s.Counter.GetValue()
		case s.Gauge != nil:
			return s.Gauge.GetValue()
		case s.Histogram != nil:
			return float64(s.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// stubVMM restores or fails as told.
type stubVMM struct {
	vmm.VMM
	restored bool
	err      error
}

func (s stubVMM) Start(context.Context, vmm.Spec) (vmm.Status, error) { return vmm.Status{}, s.err }
func (s stubVMM) Wake(context.Context, vmm.Spec) (vmm.Status, error) {
	return vmm.Status{Restored: s.restored}, s.err
}
func (s stubVMM) Sleep(context.Context, string) error { return s.err }

func TestMetricsServeEveryFamilyInTheTextFormat(t *testing.T) {
	m := New()
	ctx := context.Background()
	spec := vmm.Spec{AppID: "shop"}

	ok := Instrument(stubVMM{restored: true}, m)
	ok.Start(ctx, spec)
	ok.Wake(ctx, spec)
	ok.Sleep(ctx, "shop")
	bad := Instrument(stubVMM{err: errors.New("no")}, m)
	bad.Wake(ctx, spec)
	bad.Sleep(ctx, "shop")

	m.Pass(20*time.Millisecond, &reported.HostReportedState{
		Instances:   []reported.Instance{{AppId: "shop", State: reported.InstanceRunning, RestartCount: 1}},
		Checkpoints: []reported.Checkpoint{{CheckpointId: "c1", State: reported.CheckpointPending}},
		Exports:     []reported.Export{{ExportId: "e1", State: reported.ExportPreparing}},
	})
	m.Pass(30*time.Millisecond, &reported.HostReportedState{
		Instances:   []reported.Instance{{AppId: "shop", State: reported.InstanceIdle, RestartCount: 3}},
		Checkpoints: []reported.Checkpoint{{CheckpointId: "c1", State: reported.CheckpointReady}},
		Exports:     []reported.Export{{ExportId: "e1", State: reported.ExportFailed}},
	})
	m.DocumentRefused()
	m.ProxyRequest("shop", 200, 10, 300)
	m.ProxyRequest("shop", 200, 0, 200)
	m.ProxyRequest("", 404, 0, 48)
	m.WakeWaited("http", 2*time.Second, nil)
	m.RawConnection("shop", "tcp", "relayed", 5, 7)
	m.RawOpen("shop", "udp", 1)
	m.RawDropped("shop", 3)
	m.ProxyLimit("body_timeout")
	m.ProxyLimit("client_connections")
	m.ProxyLimit("client_connections")
	m.RawLimit("udp_port_budget", 5)

	fams := scrape(t, m)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"nibrunner_app_state", []string{"app", "shop", "state", "idle"}, 1},
		{"nibrunner_app_restarts_total", []string{"app", "shop"}, 2},
		{"nibrunner_wakes_total", []string{"app", "shop", "outcome", "restored"}, 1},
		{"nibrunner_wakes_total", []string{"app", "shop", "outcome", "failed"}, 1},
		{"nibrunner_sleeps_total", []string{"app", "shop", "outcome", "ok"}, 1},
		{"nibrunner_sleeps_total", []string{"app", "shop", "outcome", "failed"}, 1},
		{"nibrunner_wake_duration_seconds", []string{"via", "http"}, 1},
		{"nibrunner_vm_start_duration_seconds", []string{"kind", "cold"}, 1},
		{"nibrunner_vm_start_duration_seconds", []string{"kind", "restore"}, 1},
		{"nibrunner_pass_duration_seconds", nil, 2},
		{"nibrunner_passes_total", nil, 2},
		{"nibrunner_documents_refused_total", nil, 1},
		{"nibrunner_checkpoints_total", []string{"outcome", "ready"}, 1},
		{"nibrunner_checkpoints_total", []string{"outcome", "failed"}, 0},
		{"nibrunner_exports_total", []string{"outcome", "failed"}, 1},
		{"nibrunner_proxy_requests_total", []string{"app", "shop", "code", "200"}, 2},
		{"nibrunner_proxy_requests_total", []string{"app", "", "code", "404"}, 1},
		{"nibrunner_proxy_received_bytes_total", []string{"app", "shop"}, 10},
		{"nibrunner_proxy_sent_bytes_total", []string{"app", "shop"}, 500},
		{"nibrunner_raw_connections_total", []string{"app", "shop", "proto", "tcp", "outcome", "relayed"}, 1},
		{"nibrunner_raw_bytes_total", []string{"app", "shop", "proto", "tcp", "direction", "out"}, 7},
		{"nibrunner_raw_open_connections", []string{"app", "shop", "proto", "udp"}, 1},
		{"nibrunner_raw_udp_dropped_total", []string{"app", "shop"}, 3},
		{"nibrunner_proxy_limit_trips_total", []string{"limit", "body_timeout"}, 1},
		{"nibrunner_proxy_limit_trips_total", []string{"limit", "client_connections"}, 2},
		{"nibrunner_proxy_limit_trips_total", []string{"limit", "send_timeout"}, 0},
		{"nibrunner_raw_limit_trips_total", []string{"limit", "udp_port_budget"}, 5},
		{"nibrunner_raw_limit_trips_total", []string{"limit", "tcp_idle_timeout"}, 0},
	} {
		if got := value(t, fams, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// The state an app left is not reported beside the one it is in.
	for _, s := range fams["nibrunner_app_state"].Metric {
		for _, l := range s.Label {
			if l.GetName() == "state" && l.GetValue() != "idle" {
				t.Errorf("a stale state series: %v", s)
			}
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("the Go runtime's families are missing")
	}
}

func TestWhatHadSettledBeforeTheFirstReportIsNotCountedAgain(t *testing.T) {
	m := New()
	// The daemon restarted: its first report holds a checkpoint made long ago.
	m.Pass(time.Millisecond, &reported.HostReportedState{Checkpoints: []reported.Checkpoint{{CheckpointId: "old", State: reported.CheckpointReady}}})
	m.Pass(time.Millisecond, &reported.HostReportedState{Checkpoints: []reported.Checkpoint{
		{CheckpointId: "old", State: reported.CheckpointReady}, {CheckpointId: "new", State: reported.CheckpointReady}}})
	if got := value(t, scrape(t, m), "nibrunner_checkpoints_total", "outcome", "ready"); got != 1 {
		t.Fatalf("%v ready checkpoints counted, want 1 (the new one)", got)
	}
}

func TestAnAppNoLongerReportedLosesItsSeries(t *testing.T) {
	m := New()
	m.Pass(time.Millisecond, &reported.HostReportedState{Instances: []reported.Instance{{AppId: "gone", State: reported.InstanceRunning}}})
	m.Pass(time.Millisecond, &reported.HostReportedState{})
	if f, ok := scrape(t, m)["nibrunner_app_state"]; ok && len(f.Metric) > 0 {
		t.Fatalf("a forgotten app still has %v", f.Metric)
	}
}

func TestInstrumentKeepsWhatTheVMMCanAlsoDo(t *testing.T) {
	if _, ok := vmm.As[vmm.Freezer](Instrument(freezerVMM{}, New())); !ok {
		t.Fatal("a VMM that can freeze volumes lost that when instrumented")
	}
	if _, ok := vmm.As[vmm.Freezer](Instrument(stubVMM{}, New())); ok {
		t.Fatal("a VMM that cannot freeze gained it")
	}
	if _, ok := vmm.As[vmm.TenantLogger](Instrument(freezerVMM{}, New())); !ok {
		t.Fatal("a VMM that keeps the tenant's log lost it when instrumented")
	}
}

type freezerVMM struct{ stubVMM }

func (freezerVMM) FreezeVolume(context.Context, string) error { return nil }
func (freezerVMM) ThawVolume(context.Context, string) error   { return nil }
func (freezerVMM) TenantLogPath(app string) string            { return "/logs/" + app }

// countingStore is a store whose counts the test sets.
type countingStore struct {
	mu    sync.Mutex
	stats store.S3Stats
}

func (c *countingStore) Stats() store.S3Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *countingStore) set(s store.S3Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats = s
}

func TestEachStoresCountsAreReadAtEveryScrapeUnderItsName(t *testing.T) {
	m := New()
	if _, ok := scrape(t, m)["nibrunner_store_retries_total"]; ok {
		t.Fatal("store series with no store added")
	}
	exports, checkpoints := &countingStore{}, &countingStore{}
	m.AddStore("exports", exports)
	m.AddStore("checkpoints", checkpoints)
	fams := scrape(t, m)
	for _, name := range []string{"nibrunner_store_retries_total", "nibrunner_store_giveups_total"} {
		for _, st := range []string{"exports", "checkpoints"} {
			if got := value(t, fams, name, "store", st); got != 0 {
				t.Errorf("%s{store=%q} = %v before any retry", name, st, got)
			}
		}
	}
	exports.set(store.S3Stats{Retries: 3, GaveUp: 1})
	checkpoints.set(store.S3Stats{Retries: 2})
	fams = scrape(t, m)
	for _, tc := range []struct {
		name, store string
		want        float64
	}{
		{"nibrunner_store_retries_total", "exports", 3},
		{"nibrunner_store_giveups_total", "exports", 1},
		{"nibrunner_store_retries_total", "checkpoints", 2},
		{"nibrunner_store_giveups_total", "checkpoints", 0},
	} {
		if got := value(t, fams, tc.name, "store", tc.store); got != tc.want {
			t.Errorf("%s{store=%q} = %v, want %v", tc.name, tc.store, got, tc.want)
		}
	}
	if f := fams["nibrunner_store_retries_total"]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("nibrunner_store_retries_total is a %v, not a counter", f.GetType())
	}
}

// TestCountingAProxiedRequestAllocatesNothing: the proxy tells the
// metrics of every request, so that must not cost the collector.
func TestCountingAProxiedRequestAllocatesNothing(t *testing.T) {
	m := New()
	m.ProxyRequest("shop", 200, 0, 3) // the first makes the series
	if n := testing.AllocsPerRun(1000, func() { m.ProxyRequest("shop", 200, 0, 3) }); n != 0 {
		t.Errorf("counting a request allocated %.0f times; want none", n)
	}
}
