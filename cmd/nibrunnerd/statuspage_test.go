package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/control"
)

// The status page at GET / on the metrics listener, loaded in headless
// Chromium against serve on the fake VMM with three apps: the DOM it
// rendered has a row for each app with its state and hostnames, the
// woken app's last wake, and both charts. A screenshot is kept.
func TestTheStatusPageRendersEveryAppInABrowser(t *testing.T) {
	testenv.RequireCommand(t, "chromium")
	root, cfgPath, doc, in, app := fakeHost(t)
	freePort := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	port := freePort()
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The hostnames need the proxy; the page is on the metrics listener.
	fmt.Fprintf(f, "[metrics]\nlisten_address = \"127.0.0.1\"\nport = %d\n[proxy.http]\nlisten_address = \"127.0.0.1\"\nport = %d\n", port, freePort())
	f.Close()

	// Three apps: the fixture's on-request one, and two more, one of them
	// stopped; each with a hostname and a volume of its own.
	vol := doc["volumes"].([]any)[0].(map[string]any)
	in["hostnames"] = []any{map[string]any{"hostname": app + ".example.net", "kind": "platform"}}
	for _, extra := range []struct{ id, state string }{{"api", "running"}, {"batch", "stopped"}} {
		var i, v map[string]any
		b, _ := json.Marshal(in)
		json.Unmarshal(b, &i)
		b, _ = json.Marshal(vol)
		json.Unmarshal(b, &v)
		i["appId"], i["deploymentId"], i["desiredState"], i["volumeId"] = extra.id, extra.id+"-1", extra.state, extra.id+"-data"
		i["hostnames"] = []any{map[string]any{"hostname": extra.id + ".example.net", "kind": "platform"}}
		v["volumeId"], v["appId"] = extra.id+"-data", extra.id
		doc["instances"] = append(doc["instances"].([]any), i)
		doc["volumes"] = append(doc["volumes"].([]any), v)
	}
	writeDoc(t, root, doc)
	serveInBackground(t, cfgPath, "fake")
	awaitServe(t, cfgPath, 30*time.Second)
	evs := followEvents(t, cfgPath)
	// Both start, in either order.
	for started := map[string]bool{}; !started["api"] || !started[app]; {
		select {
		case e := <-evs:
			if e.Verb == control.VerbStarted {
				started[e.ID] = true
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("started within a minute: %v, want api and %s", started, app)
		}
	}
	if _, err := ctl("sleep", app, "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, evs, app, control.VerbSlept, 30*time.Second)
	if _, err := ctl("wake", app, "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, evs, app, control.VerbWoke, 30*time.Second)

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	browser := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "chromium", append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--user-data-dir=" + t.TempDir(), "--no-first-run", "--window-size=1280,1000"}, append(args, url)...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return string(out)
	}
	dom := browser("--dump-dom")
	for _, want := range []struct{ app, state string }{{app, "running"}, {"api", "running"}, {"batch", "stopped"}} {
		row := regexp.MustCompile(`<tr class="app" data-app="` + want.app + `">(.*?)</tr>`).FindStringSubmatch(dom)
		if row == nil {
			t.Errorf("the page has no row for %s", want.app)
			continue
		}
		if !strings.Contains(row[1], `state-`+want.state+`">`+want.state+`<`) || !strings.Contains(row[1], want.app+".example.net") {
			t.Errorf("%s's row: %s", want.app, row[1])
		}
		if want.app == app && !regexp.MustCompile(`<td>[0-9.]+ ms</td>`).MatchString(row[1]) {
			t.Errorf("%s was woken, but its row shows no wake latency: %s", app, row[1])
		}
	}
	if n := strings.Count(dom, `<svg class="chart"`); n != 2 || !strings.Contains(dom, `<polyline class="series"`) {
		t.Errorf("the page has %d charts (want 2, with a series drawn):\n%s", n, dom)
	}
	shot := filepath.Join(artifactDir(t), "status-page.png")
	browser("--screenshot=" + shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("the status page's screenshot: %s", shot)
}

// artifactDir is where a test keeps what a person may look at after it:
// $NIB_TEST_ARTIFACTS, else a folder under the system's temporary one
// that outlives the test.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("NIB_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "nibrunnerd-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
