// Package metrics is nibrunnerd's Prometheus /metrics ([metrics] in
// config.toml), with github.com/prometheus/client_golang.
//
// Everything is fed from outside: the proxy tells of requests and wakes
// (proxy.Recorder), the raw relay of its connections and bytes, a VMM
// wrapper (Instrument) of starts, restores and sleeps, and the daemon of
// each pass with the report it wrote and of each document it refused
// (Recorder); the checkpoint and export stores count their own retries
// (AddStore). Per-app state, restarts and checkpoint and export outcomes
// are read from that report, so the daemon needs no metric calls beyond
// those two. Counters restart from zero with the process, as Prometheus
// expects.
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/statuspage"
)

// Recorder is what the daemon tells the metrics. Nop does nothing.
type Recorder interface {
	// Pass is one converge pass: how long it took and the report it wrote.
	Pass(d time.Duration, r *reported.HostReportedState)
	// DocumentRefused is a desired.json refused whole.
	DocumentRefused()
}

// Nop is a Recorder that records nothing.
var Nop Recorder = nop{}

type nop struct{}

func (nop) Pass(time.Duration, *reported.HostReportedState) {}
func (nop) DocumentRefused()                                {}

// Metrics is one registry and the families nibrunnerd serves.
type Metrics struct {
	reg *prometheus.Registry
	// history is what the status page charts (safe for concurrent use).
	history statuspage.History

	appState        *prometheus.GaugeVec
	restarts        *prometheus.CounterVec
	wakes           *prometheus.CounterVec
	sleeps          *prometheus.CounterVec
	wakeSeconds     *prometheus.HistogramVec
	vmStartSeconds  *prometheus.HistogramVec
	passSeconds     prometheus.Histogram
	passes          prometheus.Counter
	refused         prometheus.Counter
	checkpoints     *prometheus.CounterVec
	exports         *prometheus.CounterVec
	requests        *prometheus.CounterVec
	receivedBytes   *prometheus.CounterVec
	sentBytes       *prometheus.CounterVec
	rawConnections  *prometheus.CounterVec
	rawOpen         *prometheus.GaugeVec
	appMemory       *prometheus.GaugeVec
	hostMemory      *prometheus.GaugeVec
	rawBytes        *prometheus.CounterVec
	rawUDPDropped   *prometheus.CounterVec
	proxyLimits     *prometheus.CounterVec
	rawLimits       *prometheus.CounterVec
	stores          *stores
	mu              sync.Mutex
	lastRestarts    map[string]uint32 // app → restartCount in the last report
	lastState       map[string]reported.InstanceState
	reported        bool              // a report has been read
	settledCheckpts map[string]string // checkpoint → the outcome counted
	settledExports  map[string]string
}

// Seconds buckets: a wake or a cold boot under software emulation takes
// seconds, a restore or a pass milliseconds.
var (
	wakeBuckets = []float64{.05, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60}
	passBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
)

// New returns the metrics with every family registered, plus the Go
// runtime's and the process's own.
func New() *Metrics {
	m := &Metrics{
		reg:             prometheus.NewRegistry(),
		lastRestarts:    map[string]uint32{},
		lastState:       map[string]reported.InstanceState{},
		settledCheckpts: map[string]string{},
		settledExports:  map[string]string{},
		stores:          newStores(),
	}
	m.appState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nibrunner_app_state", Help: "1 for each app's state in the last report (pending, starting, running, unhealthy, stopping, stopped, idle, failed)."}, []string{"app", "state"})
	m.restarts = counterVec("nibrunner_app_restarts_total", "Restarts of an app's guest after it exited or failed its health check (the report's restartCount, as it grew).", "app")
	m.wakes = counterVec("nibrunner_wakes_total", "Wakes of a sleeping app's guest, by outcome: restored (from its snapshot), cold (booted afresh), failed.", "app", "outcome")
	m.sleeps = counterVec("nibrunner_sleeps_total", "Sleeps of an app's guest (its state saved, its process ended), by outcome: ok, failed.", "app", "outcome")
	m.wakeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nibrunner_wake_duration_seconds", Help: "From the first request or packet for a sleeping app to its health check passing, by the front door that waited: http, tcp, udp.", Buckets: wakeBuckets}, []string{"via"})
	m.vmStartSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nibrunner_vm_start_duration_seconds", Help: "How long the VMM took to start a guest's process, by kind: cold (a boot), restore (from a snapshot); not counting the tenant's own start.", Buckets: wakeBuckets}, []string{"kind"})
	m.passSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nibrunner_pass_duration_seconds", Help: "How long one converge pass took (observe, plan, apply, persist, report).", Buckets: passBuckets})
	m.passes = prometheus.NewCounter(prometheus.CounterOpts{Name: "nibrunner_passes_total", Help: "Converge passes run."})
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{Name: "nibrunner_documents_refused_total", Help: "Readings of desired.json refused whole (the last accepted document stayed in force)."})
	m.checkpoints = counterVec("nibrunner_checkpoints_total", "Checkpoints that settled, by outcome: ready, failed.", "outcome")
	m.exports = counterVec("nibrunner_exports_total", "Exports that settled, by outcome: ready, failed.", "outcome")
	m.requests = counterVec("nibrunner_proxy_requests_total", "HTTP requests the proxy answered, by app (empty when no app answers for the hostname) and status code.", "app", "code")
	m.receivedBytes = counterVec("nibrunner_proxy_received_bytes_total", "Request body bytes the proxy received from clients, by app.", "app")
	m.sentBytes = counterVec("nibrunner_proxy_sent_bytes_total", "Response body bytes the proxy sent to clients, by app.", "app")
	m.rawConnections = counterVec("nibrunner_raw_connections_total", "Connections (tcp) and flows (udp) the raw relay carried to an app, by app, protocol and outcome: relayed, refused, failed.", "app", "proto", "outcome")
	m.appMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nibrunner_app_memory_bytes", Help: "An app's guest, while up, by kind: given (its memory size), held (what its VMM process holds of the host, its given memory until measured), tcg_cache (the part of held that is the emulator's translation cache; 0 on KVM)."}, []string{"app", "kind"})
	m.hostMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nibrunner_host_memory_bytes", Help: "The host's guests up and starts in flight, by kind: given, held; and capacity, what guests may hold."}, []string{"kind"})
	m.rawOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nibrunner_raw_open_connections", Help: "Raw connections (tcp) and flows (udp) open now, by app and protocol."}, []string{"app", "proto"})
	m.rawBytes = counterVec("nibrunner_raw_bytes_total", "Bytes the raw relay carried, by app, protocol and direction: in (to the app), out (from it).", "app", "proto", "direction")
	m.rawUDPDropped = counterVec("nibrunner_raw_udp_dropped_total", "UDP datagrams dropped because the queue in front of a waking app was full, by app.", "app")
	m.proxyLimits = counterVec("nibrunner_proxy_limit_trips_total", "Client connections the HTTP proxy ended at a cap or timeout, by limit: header_timeout, header_size, body_timeout, send_timeout, connections, client_connections, app_connections ([proxy.http] in config.toml).", "limit")
	m.rawLimits = counterVec("nibrunner_raw_limit_trips_total", "Raw connections ended and UDP datagrams dropped at a cap or timeout, by limit: tcp_idle_timeout, tcp_connections, tcp_client_connections, tcp_app_connections, udp_port_budget, udp_flows, udp_client_flows ([proxy.raw] in config.toml).", "limit")
	m.reg.MustRegister(
		m.appState, m.restarts, m.wakes, m.sleeps, m.wakeSeconds, m.vmStartSeconds,
		m.passSeconds, m.passes, m.refused, m.checkpoints, m.exports,
		m.requests, m.receivedBytes, m.sentBytes,
		m.rawConnections, m.rawOpen, m.rawBytes, m.rawUDPDropped,
		m.proxyLimits, m.rawLimits, m.appMemory, m.hostMemory, m.stores,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Families whose labels are fixed show from the first scrape.
	for _, o := range []string{"ready", "failed"} {
		m.checkpoints.WithLabelValues(o)
		m.exports.WithLabelValues(o)
	}
	for _, l := range []string{"header_timeout", "header_size", "body_timeout", "send_timeout", "connections", "client_connections", "app_connections"} {
		m.proxyLimits.WithLabelValues(l)
	}
	for _, l := range []string{"tcp_idle_timeout", "tcp_connections", "tcp_client_connections", "tcp_app_connections", "udp_port_budget", "udp_flows", "udp_client_flows"} {
		m.rawLimits.WithLabelValues(l)
	}
	return m
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Registry is where the families live (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Pass implements Recorder.
func (m *Metrics) Pass(d time.Duration, r *reported.HostReportedState) {
	m.passSeconds.Observe(d.Seconds())
	m.passes.Inc()
	if r != nil {
		m.report(r)
		if r.Memory != nil {
			m.history.Held(r.ReportedAt, r.Memory.HeldMib)
		}
	}
}

// History is the last hour of wakes and memory held, for the status page.
func (m *Metrics) History() *statuspage.History { return &m.history }

// DocumentRefused implements Recorder.
func (m *Metrics) DocumentRefused() { m.refused.Inc() }

// report reads one pass's report: app states, restarts as they grew,
// checkpoints and exports as they settle.
func (m *Metrics) report(r *reported.HostReportedState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	if hm := r.Memory; hm != nil {
		m.hostMemory.WithLabelValues("given").Set(float64(hm.GivenMib << 20))
		m.hostMemory.WithLabelValues("held").Set(float64(hm.HeldMib << 20))
		m.hostMemory.WithLabelValues("capacity").Set(float64(hm.CapacityMib << 20))
	}
	for _, in := range r.Instances {
		app := string(in.AppId)
		seen[app] = true
		if mem := in.Memory; mem != nil {
			m.appMemory.WithLabelValues(app, "given").Set(float64(mem.GivenMib << 20))
			m.appMemory.WithLabelValues(app, "held").Set(float64(mem.HeldMib << 20))
			m.appMemory.WithLabelValues(app, "tcg_cache").Set(float64(mem.TcgCacheMib << 20))
		} else {
			m.appMemory.DeleteLabelValues(app, "given")
			m.appMemory.DeleteLabelValues(app, "held")
			m.appMemory.DeleteLabelValues(app, "tcg_cache")
		}
		if prev, ok := m.lastState[app]; !ok || prev != in.State {
			if ok {
				m.appState.DeleteLabelValues(app, string(prev))
			}
			m.lastState[app] = in.State
		}
		m.appState.WithLabelValues(app, string(in.State)).Set(1)
		if last, ok := m.lastRestarts[app]; ok && in.RestartCount > last {
			m.restarts.WithLabelValues(app).Add(float64(in.RestartCount - last))
		} else if !ok {
			m.restarts.WithLabelValues(app)
		}
		m.lastRestarts[app] = in.RestartCount
	}
	for app, st := range m.lastState {
		if !seen[app] {
			// Forgotten: its series go, as the app did.
			m.appState.DeleteLabelValues(app, string(st))
			m.restarts.DeleteLabelValues(app)
			m.appMemory.DeleteLabelValues(app, "given")
			m.appMemory.DeleteLabelValues(app, "held")
			m.appMemory.DeleteLabelValues(app, "tcg_cache")
			delete(m.lastState, app)
			delete(m.lastRestarts, app)
		}
	}
	// The first report only tells what had settled before this process
	// began: that is not counted again (as a restart count already there
	// is not), so a daemon restart does not add every ready checkpoint.
	count := m.reported
	m.reported = true
	for _, c := range r.Checkpoints {
		settle(m.settledCheckpts, m.checkpoints, string(c.CheckpointId), string(c.State), count)
	}
	for _, e := range r.Exports {
		settle(m.settledExports, m.exports, string(e.ExportId), string(e.State), count)
	}
}

// settle counts an object (a checkpoint, an export) once per outcome it
// settles on: ready or failed. One that goes back to pending (a retry)
// may settle again.
func settle(settled map[string]string, outcomes *prometheus.CounterVec, id, state string, count bool) {
	if state != "ready" && state != "failed" {
		delete(settled, id)
		return
	}
	if settled[id] != state {
		settled[id] = state
		if count {
			outcomes.WithLabelValues(state).Inc()
		}
	}
}

// ProxyRequest implements proxy.Recorder.
func (m *Metrics) ProxyRequest(app string, status int, bytesIn, bytesOut int64) {
	m.requests.WithLabelValues(app, statusLabel(status)).Inc()
	if bytesIn > 0 {
		m.receivedBytes.WithLabelValues(app).Add(float64(bytesIn))
	}
	if bytesOut > 0 {
		m.sentBytes.WithLabelValues(app).Add(float64(bytesOut))
	}
}

// statusLabels are the code labels of every status, made once: an
// strconv.Itoa per request was the one allocation a proxied request made
// in steady state (docs/bench.md).
var statusLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func statusLabel(status int) string {
	if status >= 0 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return strconv.Itoa(status)
}

// WakeWaited records a wake a front door waited on (via: http, tcp,
// udp), from its first request or packet to the app answering.
func (m *Metrics) WakeWaited(via string, d time.Duration, err error) {
	if err == nil {
		m.wakeSeconds.WithLabelValues(via).Observe(d.Seconds())
	}
}

// RawConnection records one raw connection or flow: its outcome when it
// ends, with the bytes it carried each way.
func (m *Metrics) RawConnection(app, proto, outcome string, in, out int64) {
	m.rawConnections.WithLabelValues(app, proto, outcome).Inc()
	if in > 0 {
		m.rawBytes.WithLabelValues(app, proto, "in").Add(float64(in))
	}
	if out > 0 {
		m.rawBytes.WithLabelValues(app, proto, "out").Add(float64(out))
	}
}

// RawOpen moves the count of open raw connections or flows by delta.
func (m *Metrics) RawOpen(app, proto string, delta int) {
	m.rawOpen.WithLabelValues(app, proto).Add(float64(delta))
}

// RawDropped records UDP datagrams dropped in front of a waking app.
func (m *Metrics) RawDropped(app string, n int) {
	m.rawUDPDropped.WithLabelValues(app).Add(float64(n))
}

// ProxyLimit implements proxy.Recorder.
func (m *Metrics) ProxyLimit(limit string) { m.proxyLimits.WithLabelValues(limit).Inc() }

// RawLimit implements raw.Recorder: n trips of limit (datagrams, for
// the UDP budget).
func (m *Metrics) RawLimit(limit string, n int) { m.rawLimits.WithLabelValues(limit).Add(float64(n)) }

// vmStarted records a VMM start or wake.
func (m *Metrics) vmStarted(kind string, d time.Duration) {
	m.vmStartSeconds.WithLabelValues(kind).Observe(d.Seconds())
}
