package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/reported"
)

// waitReport waits up to limit for the host's report to satisfy cond.
func waitReport(t testing.TB, root, what string, limit time.Duration, cond func(*reported.HostReportedState) bool) *reported.HostReportedState {
	t.Helper()
	var r reported.HostReportedState
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r = reported.HostReportedState{}
		if b, err := os.ReadFile(filepath.Join(root, "state", "reported.json")); err == nil && json.Unmarshal(b, &r) == nil && cond(&r) {
			return &r
		}
	}
	t.Fatalf("%s never happened: %+v", what, r)
	return nil
}

func appIs(app string, st reported.InstanceState) func(*reported.HostReportedState) bool {
	return func(r *reported.HostReportedState) bool {
		for _, in := range r.Instances {
			if string(in.AppId) == app {
				return in.State == st
			}
		}
		return false
	}
}

// awaitServe waits up to limit for serve to answer a ps on its socket.
func awaitServe(t testing.TB, cfgPath string, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		if _, err := ctl("ps", "--config", cfgPath); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("ps never reached serve: %v", err)
		}
	}
}

// followEvents runs `nibrunnerd events -f --output json` until the test
// ends and hands on each event it prints.
func followEvents(t testing.TB, cfgPath string) <-chan control.Event {
	t.Helper()
	pr, pw, _ := os.Pipe()
	cmd := newRootCmd()
	cmd.SetOut(pw)
	cmd.SetArgs([]string{"events", "-f", "--output", "json", "--config", cfgPath})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("events -f: %v", err)
		}
	})
	out := make(chan control.Event, 64)
	go func() {
		defer close(out)
		dec := json.NewDecoder(pr)
		for {
			var e control.Event
			if dec.Decode(&e) != nil {
				return
			}
			out <- e
		}
	}()
	return out
}

// waitEvent reads events until one of app has verb.
func waitEvent(t testing.TB, evs <-chan control.Event, app string, verb control.Verb, limit time.Duration) control.Event {
	t.Helper()
	timeout := time.After(limit)
	var seen []string
	for {
		select {
		case e, ok := <-evs:
			if !ok {
				t.Fatalf("events -f ended before %s %s; saw %v", app, verb, seen)
			}
			seen = append(seen, e.ID+" "+string(e.Verb))
			if e.ID == app && e.Verb == verb {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s %s event within %s; saw %v", app, verb, limit, seen)
		}
	}
}

func TestPsStatusLogsAndEventsShowWhatTheDaemonDid(t *testing.T) {
	root, cfgPath, _, _, app := fakeHost(t)
	serveInBackground(t, cfgPath, "fake")
	// The socket is up once serve answers a ps.
	awaitServe(t, cfgPath, 30*time.Second)
	if fi, err := os.Stat(filepath.Join(root, "run", control.SocketName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the control socket is not root's alone: %v %v", fi.Mode(), err)
	}
	evs := followEvents(t, cfgPath)
	waitEvent(t, evs, app, control.VerbStarted, 30*time.Second)
	waitReport(t, root, app+" running", 30*time.Second, appIs(app, reported.InstanceRunning))

	out, err := ctl("ps", "--config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "APP") ||
		!strings.HasPrefix(lines[1], app+" ") || !strings.Contains(lines[1], " running ") {
		t.Fatalf("ps printed:\n%s", out)
	}
	out, err = ctl("ps", "--output", "json", "--config", cfgPath)
	var rows []psRow
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].AppId != app || rows[0].HostPort == 0 {
		t.Fatalf("ps --output json: %v\n%s", err, out)
	}

	out, err = ctl("status", app, "--output", "json", "--config", cfgPath)
	var st control.AppStatus
	if err != nil || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --output json: %v\n%s", err, out)
	}
	if st.Instance.State != reported.InstanceRunning || len(st.Volumes) != 1 || st.Volumes[0].State != reported.VolumeReady {
		t.Fatalf("status: %+v", st)
	}
	out, err = ctl("status", app, "--config", cfgPath)
	if err != nil || !strings.HasPrefix(out, app+"  running  deployment ") || !strings.Contains(out, "volume "+string(st.Volumes[0].VolumeId)+"  ready") {
		t.Fatalf("status: %v\n%s", err, out)
	}

	// The fake guest says where it listens, as its first line.
	out, err = ctl("logs", app, "--tail", "1", "--config", cfgPath)
	if err != nil || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "tenant  | fake guest "+app+" ") {
		t.Fatalf("logs --tail 1: %v\n%q", err, out)
	}

	if _, err := ctl("sleep", app, "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	e := waitEvent(t, evs, app, control.VerbSlept, 30*time.Second)
	if e.From != "running" || e.To != "idle" {
		t.Fatalf("the sleep's event: %+v", e)
	}
	if _, err := ctl("wake", app, "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, evs, app, control.VerbWoke, 30*time.Second)
	out, err = ctl("events", "--config", cfgPath)
	if err != nil || !strings.Contains(out, " slept      running → idle") || !strings.Contains(out, " woke       ") {
		t.Fatalf("events: %v\n%s", err, out)
	}

	out, err = ctl("events", "--after", fmt.Sprint(e.Seq), "--output", "json", "--config", cfgPath)
	if err != nil || strings.Contains(out, `"verb":"slept"`) || !strings.Contains(out, `"verb":"woke"`) {
		t.Fatalf("events after the sleep's seq %d: %v\n%s", e.Seq, err, out)
	}

	if _, err := ctl("status", "nope", "--config", cfgPath); err == nil || !strings.Contains(err.Error(), `no app "nope" on this host`) {
		t.Fatalf("status of an unknown app: %v", err)
	}
}

func TestTheOperatorsCommandsRefuseAnUnknownOutputFormat(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{{"ps"}, {"status", "web"}, {"events"}, {"logs", "web"}} {
		cmd := newRootCmd()
		cmd.SetOut(&out)
		cmd.SetArgs(append(args, "--output", "yaml", "--socket", "/nonexistent"))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `--output "yaml": choose text or json`) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// With [metrics] on, serve wraps the VMM to count its starts; the logs are
// still found through the wrapper (they were not: "keeps no logs").
func TestLogsPrintTheAppsOutputWithMetricsOn(t *testing.T) {
	_, cfgPath, _, _, app := fakeHost(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[metrics]\nlisten_address = \"127.0.0.1\"\nport = %d\n", port)
	f.Close()
	serveInBackground(t, cfgPath, "fake")
	awaitServe(t, cfgPath, 30*time.Second)
	evs := followEvents(t, cfgPath)
	waitEvent(t, evs, app, control.VerbStarted, 30*time.Second)
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err = ctl("logs", app, "--tail", "1", "--config", cfgPath)
		if err == nil && strings.HasPrefix(out, "tenant  | fake guest "+app+" ") {
			break
		}
		if err != nil && strings.Contains(err.Error(), "keeps no logs") || time.Now().After(deadline) {
			t.Fatalf("logs --tail 1 with [metrics] on: %v\n%q", err, out)
		}
	}
}
