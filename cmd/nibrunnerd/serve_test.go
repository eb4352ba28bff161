package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
)

// TestMain lets the fake VMM run its guests as this test binary (serve
// --vmm fake runs them as nibrunnerd itself).
func TestMain(m *testing.M) {
	// This binary is the jail's launcher too, as nibrunnerd's main is.
	if jail.IsLauncher(os.Args) {
		os.Exit(jail.RunLauncher(os.Args))
	}
	runFlipperIfAsked()
	fake.RunGuestIfAsked()
	// A test that runs a document's shell lines links this binary into
	// their PATH as nibrunnerd: be it.
	if os.Getenv(asNibrunnerd) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func TestServeWithTheFakeVMMBringsTheExampleAppUpAndLeavesItRunningWhenItStops(t *testing.T) {
	testenv.RequireCommand(t, "mke2fs") // the ext4 volume backend
	root := t.TempDir()
	layer := append([]byte("hsqs"), make([]byte, 4092)...)
	os.MkdirAll(filepath.Join(root, "store", "layers"), 0o755)
	os.WriteFile(filepath.Join(root, "store", "layers", "base.squashfs"), layer, 0o644)
	sum := sha256.Sum256(layer)
	config := fmt.Sprintf(`max_apps = 10
[paths]
state_dir = "%[1]s/state"
runtime_dir = "%[1]s/run"
snapshot_dir = "%[1]s/snap"
guest_image_dir = "%[1]s/guest"
desired_state_file = "%[1]s/control/desired.json"
[artifacts]
store_url = "%[1]s/store"
[volumes]
backend = "local-file"
storage_prefix = "%[1]s/volumes"
[exports]
store_url = "%[1]s/exports"
staging_dir = "%[1]s/staging"
[network]
denied_egress_addresses_v4 = []
denied_egress_addresses_v6 = []
[proxy.http]
listen_address = "127.0.0.1"
port = 18080
[metrics]
listen_address = "127.0.0.1"
port = 18091
`, root)
	cfgPath := filepath.Join(root, "config.toml")
	os.WriteFile(cfgPath, []byte(config), 0o644)

	// The example document, on the layer this test has.
	b, err := os.ReadFile("../../examples/desired.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	in := doc["instances"].([]any)[0].(map[string]any)
	in["layers"] = []any{map[string]any{"kind": "filesystem", "digest": hex.EncodeToString(sum[:]), "objectKey": "layers/base.squashfs"}}
	doc["volumes"].([]any)[0].(map[string]any)["sizeBytes"] = 8 << 20
	b, _ = json.Marshal(doc)
	os.MkdirAll(filepath.Join(root, "control"), 0o755)
	os.WriteFile(filepath.Join(root, "control", "desired.json"), b, 0o644)
	t.Cleanup(func() { fake.KillAll(filepath.Join(root, "run")) })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfgPath, "fake", 0, false) }()
	var r reported.HostReportedState
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(root, "state", "reported.json")); err == nil {
			json.Unmarshal(b, &r)
			if len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceRunning {
				break
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("blog never ran: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// /metrics serves what the daemon, the VMM and the proxy did.
	if resp, err := http.Get("http://127.0.0.1:18080/"); err == nil {
		resp.Body.Close()
	}
	scrapeMetrics(t, "http://127.0.0.1:18091/metrics", map[string]string{
		"nibrunner_app_state":                 `app="blog",state="running"`,
		"nibrunner_pass_duration_seconds":     "",
		"nibrunner_vm_start_duration_seconds": `kind="cold"`,
		"nibrunner_proxy_requests_total":      `code="404"`,
	})
	if v := r.Volumes[0]; v.State != reported.VolumeReady || !strings.HasSuffix(v.DevicePath, ".ext4") || v.Usage == nil || v.Usage.TotalBytes == 0 || v.Usage.UsedBytes == 0 {
		t.Fatalf("volume %+v", r.Volumes[0])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The guest outlives the daemon.
	pfs, _ := vmm.ReadPidfiles(filepath.Join(root, "run"))
	boot, _ := vmm.BootID()
	if len(pfs) != 1 || !pfs[0].Alive(boot) {
		t.Fatalf("the guest did not outlive serve: %+v", pfs)
	}
	resp, err := http.Get("http://" + pfs[0].Endpoint + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// scrapeMetrics GETs url, parses it as the Prometheus text format and
// wants a series of each family whose labels include the given text.
func scrapeMetrics(t *testing.T, url string, want map[string]string) {
	t.Helper()
	// A request's series is recorded once its answer has gone out, so a
	// client can read the answer a moment before the counter moves:
	// scrape again until every series is there, within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		missing, err := missingSeries(url, want)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, m := range missing {
				t.Error(m)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// missingSeries scrapes url once and says which of want it lacks.
func missingSeries(url string, want map[string]string) ([]string, error) {
	fams, err := scrapeOnce(url)
	if err != nil {
		return nil, err
	}
	var missing []string
	for name, labels := range want {
		f, ok := fams[name]
		if !ok {
			missing = append(missing, fmt.Sprintf("no %s in %s", name, url))
			continue
		}
		found := false
		for _, m := range f.Metric {
			if strings.Contains(labelText(m), labels) {
				found = true
			}
		}
		if !found {
			missing = append(missing, fmt.Sprintf("no %s{%s} in %s: %v", name, labels, url, f.Metric))
		}
	}
	return missing, nil
}

func TestOnTheUserNetworkAMaxAppsReachingTheEphemeralPortsIsWarnedAboutWithFixesThatCanBeTaken(t *testing.T) {
	ephemeral := func(r string) {
		old := network.ProcSys
		t.Cleanup(func() { network.ProcSys = old })
		network.ProcSys = t.TempDir()
		if err := os.MkdirAll(filepath.Join(network.ProcSys, "net", "ipv4"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(network.ProcSys, "net", "ipv4", "ip_local_port_range"), []byte(r), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	says := func(w string, want ...string) {
		t.Helper()
		for _, s := range want {
			if !strings.Contains(w, s) {
				t.Fatalf("the warning lacks %q: %s", s, w)
			}
		}
	}
	ephemeral("32768\t60999\n")
	if w := userNetworkPortWarning(1471); w != "" {
		t.Fatalf("max_apps 1471 keeps every host port under 32768, yet: %s", w)
	}
	says(userNetworkPortWarning(4000), "slots 1471 and up (max_apps is 4000)", "32768–60999", "lower max_apps to 1471",
		"reserve the ports (8000 stay for outgoing connections): sysctl net.ipv4.ip_local_reserved_ports=32768-52999", "run without --user-network")
	// Reserving all or nearly all of the range would leave the host no
	// ports to connect from: not advised.
	for _, n := range []int{5000, slot.Max} {
		w := userNetworkPortWarning(n)
		says(w, "lower max_apps to 1471", "run without --user-network")
		if strings.Contains(w, "ip_local_reserved_ports") {
			t.Fatalf("max_apps %d: the warning advises reserving what outgoing connections need: %s", n, w)
		}
	}
	// A range that starts at the first slot: no max_apps avoids it.
	ephemeral("1024 65535\n")
	w := userNetworkPortWarning(100)
	says(w, "slots 0 and up", "reserve the ports (63712 stay for outgoing connections): sysctl net.ipv4.ip_local_reserved_ports=21000-21799", "run without --user-network")
	if strings.Contains(w, "max_apps to") {
		t.Fatalf("advice that cannot be taken (max_apps is at least 1): %s", w)
	}
}

// scrapeOnce GETs url and parses it as the Prometheus text format.
func scrapeOnce(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", url, err)
	}
	return fams, nil
}

// labelText is a series' labels as written in a query: a="x",b="y".
func labelText(m *dto.Metric) string {
	var parts []string
	for _, l := range m.Label {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return strings.Join(parts, ",")
}
