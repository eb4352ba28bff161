package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/metrics"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// flakyS3 is a proxy in front of an S3 server that answers 503 SlowDown,
// without passing it on, to the PUTs of the object whose key ends in
// suffix, the first times times (always when times < 0).
type flakyS3 struct {
	next http.Handler

	mu     sync.Mutex
	faults map[string]int // key suffix → faults left
}

func (f *flakyS3) fail(suffix string, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[suffix] = times
}

func (f *flakyS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && f.take(r.URL.Path) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>injected by the test</Message></Error>`)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *flakyS3) take(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for suffix, left := range f.faults {
		if strings.HasSuffix(path, suffix) && left != 0 {
			if left > 0 {
				f.faults[suffix] = left - 1
			}
			return true
		}
	}
	return false
}

// The checkpoint and export stores serve opens retry on the daemon's
// clock, not the machine's, and what they retry and give up on is on
// /metrics by store.
func TestTheBackgroundStoresRetryOnTheDaemonsClockAndCountOnMetrics(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "host")
	target, _ := url.Parse(srv.Endpoint)
	// The proxy keeps the Host the client signed (NewSingleHostReverseProxy
	// does not rewrite it), so versitygw checks the signatures as sent.
	flaky := &flakyS3{next: httputil.NewSingleHostReverseProxy(target), faults: map[string]int{}}
	front := httptest.NewServer(flaky)
	defer front.Close()
	t.Setenv("NIB_S3_ENDPOINT", front.URL)

	root := t.TempDir()
	cfg := &hostconfig.Config{}
	cfg.Paths.StateDir = filepath.Join(root, "state")
	cfg.Volumes.StoragePrefix = filepath.Join(root, "volumes")
	cfg.Exports.StoreURL = "s3://" + bucket + "/exports"
	cfg.Exports.StagingDir = filepath.Join(root, "staging")
	cfg.Checkpoints.StoreURL = "s3://" + bucket + "/checkpoints"
	clk := clock.NewManual(time.Now())
	mx := metrics.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cps, _, err := openBackground(ctx, cfg, clk, mx)
	if err != nil {
		t.Fatal(err)
	}
	mxServer, err := mx.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- mxServer.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	metricsURL := "http://" + mxServer.Addr().String() + "/metrics"

	vol := checkpoint.Volume{ID: "data", Path: filepath.Join(root, "data.img")}
	if err := os.WriteFile(vol.Path, []byte("what the volume holds"), 0o600); err != nil {
		t.Fatal(err)
	}
	// create makes checkpoint id, moving the clock past every wait the
	// store arms; waits says how many there were. A wait on any other
	// clock never shows here, and the create ends with none.
	create := func(id string) (waits int, err error) {
		armed := clk.Armed()
		done := make(chan error, 1)
		go func() { _, err := cps.Create(ctx, id, vol); done <- err }()
		for {
			select {
			case err := <-done:
				return waits, err
			case <-armed:
				waits++
				armed = clk.Armed()
				clk.Advance(store.DefaultRetry.Max)
			case <-time.After(time.Minute):
				t.Fatalf("checkpoint %s: neither done nor waiting on the clock after a minute (%d waits)", id, waits)
			}
		}
	}

	// Once refused: sent again after one wait on the daemon's clock.
	flaky.fail("/c1"+checkpoint.ObjectSuffix, 1)
	if waits, err := create("c1"); err != nil || waits != 1 {
		t.Fatalf("checkpoint c1 with one refused PUT: %d waits on the daemon's clock, error %v; want 1 wait and no error", waits, err)
	}
	if _, err := srv.Client.StatObject(ctx, bucket, "checkpoints/"+checkpointPrefix()+"c1"+checkpoint.ObjectSuffix, minio.StatObjectOptions{}); err != nil {
		t.Fatalf("checkpoint c1 is not in the bucket after its retry: %v", err)
	}
	wantCounters(t, metricsURL, map[string]float64{
		`nibrunner_store_retries_total{store="checkpoints"}`: 1,
		`nibrunner_store_giveups_total{store="checkpoints"}`: 0,
		`nibrunner_store_retries_total{store="exports"}`:     0,
		`nibrunner_store_giveups_total{store="exports"}`:     0,
	})

	// Always refused: every attempt is sent, then the store gives up.
	flaky.fail("/c2"+checkpoint.ObjectSuffix, -1)
	attempts := store.DefaultRetry.Attempts
	waits, err := create("c2")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("failed on all %d attempts", attempts)) {
		t.Fatalf("checkpoint c2 with every PUT refused: %v; want it to fail on all %d attempts", err, attempts)
	}
	if waits != attempts-1 {
		t.Fatalf("checkpoint c2: %d waits on the daemon's clock, want %d", waits, attempts-1)
	}
	wantCounters(t, metricsURL, map[string]float64{
		`nibrunner_store_retries_total{store="checkpoints"}`: float64(1 + attempts - 1),
		`nibrunner_store_giveups_total{store="checkpoints"}`: 1,
		`nibrunner_store_retries_total{store="exports"}`:     0,
		`nibrunner_store_giveups_total{store="exports"}`:     0,
	})
}

// wantCounters scrapes url once and checks the value of each counter
// series, written name{label="value"}.
func wantCounters(t *testing.T, url string, series map[string]float64) {
	t.Helper()
	fams, err := scrapeOnce(url)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			got[name+"{"+labelText(m)+"}"] = m.GetCounter().GetValue()
		}
	}
	for s, v := range series {
		if g, ok := got[s]; !ok {
			t.Errorf("%s is not on %s", s, url)
		} else if g != v {
			t.Errorf("%s = %v, want %v", s, g, v)
		}
	}
}
