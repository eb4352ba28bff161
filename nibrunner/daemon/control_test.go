package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func TestAnOnRequestAppSleepsWhenAskedBeforeItsIdleTimeoutAndWakesRestored(t *testing.T) {
	h := newHost(t)
	d, v, _ := h.start(t)
	app := h.app("a", "a1", withState(desired.StateOnRequest))
	h.write(t, doc(app))
	booted := instance(h.waitFor(t, "a's first boot", allIn(reported.InstanceRunning, "a")), "a")

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := d.Sleep(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "a asleep", allIn(reported.InstanceIdle, "a"))
	if _, up := pids(t, v)["a"]; up {
		t.Fatal("a sleeping app has a guest")
	}
	if _, err := os.Stat(filepath.Join(h.dir, "snap", "a", "stamp.json")); err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	if err := d.Sleep(ctx, "a"); err != nil {
		t.Fatalf("asking a sleeping app to sleep again: %v", err)
	}

	if err := d.Wake(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r := h.waitFor(t, "a awake", allIn(reported.InstanceRunning, "a"))
	// The first boot may have spent a restart on a loaded machine (a guest
	// slower than its grace period); the sleep and the wake spend none.
	if a := instance(r, "a"); a.RestartCount != booted.RestartCount {
		t.Fatalf("a sleep and wake spent the restart budget: restartCount %d after the first boot, %d after the wake (%+v)", booted.RestartCount, a.RestartCount, a)
	}
	// Restored, not booted cold: the report would say the snapshot was
	// dropped.
	if a := instance(r, "a"); a.Message != "" {
		t.Fatalf("a woke saying %q; it should have been restored from its snapshot", a.Message)
	}
}

func TestOnlyAnUpOnRequestAppCanBePutToSleep(t *testing.T) {
	h := newHost(t)
	d, _, _ := h.start(t)
	h.write(t, doc(h.app("always", "al1")))
	h.waitFor(t, "always running", allIn(reported.InstanceRunning, "always"))

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, app := range []string{"always", "nobody"} {
		if err := d.Sleep(ctx, app); !errors.Is(err, ErrCannotSleep) {
			t.Errorf("sleep %s: %v, want ErrCannotSleep", app, err)
		}
	}
	r := h.waitFor(t, "always still running", allIn(reported.InstanceRunning, "always"))
	if got := instance(r, "always"); got.RestartCount != 0 {
		t.Fatalf("a refused sleep restarted the app: %+v", got)
	}
}

// The control socket says which volume is an app's from the document the
// daemon accepted: a refused document on disk that moves the app onto
// another app's volume is not what it serves.
func TestTheControlSocketServesTheAcceptedDocumentNotARefusedOne(t *testing.T) {
	h := newHost(t)
	d, _, _ := h.start(t)
	accepted := doc(h.app("web", "w1"), h.app("blog", "b1"))
	h.write(t, accepted)
	h.waitFor(t, "web and blog running", allIn(reported.InstanceRunning, "web", "blog"))

	moved := doc(h.app("web", "w1"), h.app("blog", "b1"))
	moved.Instances[0].VolumeId = "blog-data"
	refused := strings.ReplaceAll(mustJSON(t, moved), `"memoryMib":128`, `"memoryMib":-1`)
	if _, err := desired.Decode([]byte(refused)); err == nil {
		t.Fatal("the test's refused document decodes")
	}
	h.writeRaw(t, []byte(refused))
	h.waitFor(t, "the refusal in the report", func(r *reported.HostReportedState) bool { return strings.Contains(r.Message, "refused") })

	srv := &control.Server{Apps: d, ReportPath: h.reportPath(), Accepted: d.Accepted}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/apps/web", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status of web: %d %s", rec.Code, rec.Body)
	}
	var st control.AppStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	var vols []string
	for _, v := range st.Volumes {
		vols = append(vols, string(v.VolumeId))
	}
	if len(vols) != 1 || vols[0] != "web-data" {
		t.Fatalf("web's volumes are %v; the accepted document puts it on web-data alone (the refused one on blog-data)", vols)
	}
}
