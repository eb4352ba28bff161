package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
)

func pids(t *testing.T, v *fake.VMM) map[string]vmm.Status {
	t.Helper()
	l, err := v.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]vmm.Status{}
	for _, s := range l {
		out[s.AppID] = s
	}
	return out
}

func TestWritingADocumentBringsAppsUpAndTheReportTellsTheTruth(t *testing.T) {
	h := newHost(t)
	_, v, _ := h.start(t)
	r := h.waitFor(t, "a report saying there is no document", func(r *reported.HostReportedState) bool { return r.Message != "" })
	if r.State != reported.HostRegistering || len(r.Instances) != 0 || !strings.Contains(r.Message, "does not exist") {
		t.Fatalf("before a document: state %s, %d instances, message %q", r.State, len(r.Instances), r.Message)
	}

	digest := h.write(t, doc(h.app("a", "a1"), h.app("b", "b1"), h.app("c", "c1", withState(desired.StateStopped))))
	r = h.waitFor(t, "a and b running", allIn(reported.InstanceRunning, "a", "b"))
	if r.State != reported.HostReady || string(r.AcceptedDigest) != digest || r.Message != "" {
		t.Fatalf("host: state %s digest %s message %q", r.State, r.AcceptedDigest, r.Message)
	}
	if c := instance(r, "c"); c.State != reported.InstanceStopped {
		t.Fatalf("c is %s", c.State)
	}
	guests := pids(t, v)
	if len(guests) != 2 {
		t.Fatalf("guests: %v", guests)
	}
	for _, app := range []string{"a", "b"} {
		in := instance(r, app)
		if in.RestartCount != 0 || in.HostPort < 21000 || in.GuestIpv4 == "" || in.StartedAt == nil || in.LastHealthyAt == nil || in.ConvergedAt == nil || len(in.LayerDigests) != 1 {
			t.Fatalf("%s: %+v", app, in)
		}
		if vol := volumeOf(r, app+"-data"); vol == nil || vol.State != reported.VolumeReady || vol.SizeBytes != 1<<20 {
			t.Fatalf("volume of %s: %+v", app, vol)
		}
		// The report's running is the truth: the guest answers.
		resp, err := http.Get("http://" + guests[app].Endpoint + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(body), app+" "+app+"1") {
			t.Fatalf("%s answered %q", app, body)
		}
	}
	if instance(r, "a").HostPort == instance(r, "b").HostPort {
		t.Fatal("two apps share a host port")
	}

	// A new deploymentId replaces a, and only a.
	h.write(t, doc(h.app("a", "a2"), h.app("b", "b1"), h.app("c", "c1", withState(desired.StateStopped))))
	r = h.waitFor(t, "a2 running", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a.DeploymentId == "a2" && a.State == reported.InstanceRunning
	})
	after := pids(t, v)
	if after["a"].PID == guests["a"].PID || after["a"].DeploymentID != "a2" {
		t.Fatalf("a was not replaced: %+v", after["a"])
	}
	if after["b"].PID != guests["b"].PID {
		t.Fatal("b was restarted by a change to a")
	}
	if instance(r, "a").RestartCount != 0 {
		t.Fatal("a replacement counted as a restart")
	}

	// Asking a stopped takes it down; its volume stays.
	h.write(t, doc(h.app("a", "a2", withState(desired.StateStopped)), h.app("b", "b1")))
	r = h.waitFor(t, "a stopped", allIn(reported.InstanceStopped, "a"))
	if _, up := pids(t, v)["a"]; up {
		t.Fatal("a stopped app still has a guest")
	}
	if vol := volumeOf(r, "a-data"); vol.State != reported.VolumeReady {
		t.Fatalf("the volume of a stopped app is %s", vol.State)
	}
}

func TestARefusedDocumentKeepsTheLastGoodOneAndSetsMessage(t *testing.T) {
	h := newHost(t)
	_, v, stop := h.start(t)
	good := h.write(t, doc(h.app("a", "a1")))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	pid := pids(t, v)["a"].PID

	// Each kind of rule: not JSON at all, a range, a pattern, and a
	// reference between parts of the document. The message names why.
	refused := []struct{ doc, why string }{
		{`{"hostId": "test-host"`, "JSON"}, // truncated mid-write
		{`{"hostId": "test-host", "volumes": [], "instances": [], "checkpoints": [], "exports": [], "x": 1} {}`, "JSON"},
		{strings.Replace(mustJSON(t, doc(h.app("a", "a1"))), `"memoryMib":128`, `"memoryMib":-1`, 1), "instances[0].config.resources.memoryMib"},
		{strings.Replace(mustJSON(t, doc(h.app("a", "a1"))), `"appId":"a"`, `"appId":"-bad"`, 1), `"-bad" is not an identifier`},
		{strings.Replace(mustJSON(t, doc(h.app("a", "a1"))), `"volumeId":"a-data","desiredState":"running"`, `"volumeId":"elsewhere","desiredState":"running"`, 1), "instances[0].volumeId"},
		// So many reasons that the message is cut: what the host does
		// meanwhile still shows, before them.
		{strings.ReplaceAll(mustJSON(t, doc(h.app("a", "a1"), h.app("b", "b1"), h.app("c", "c1"), h.app("d", "d1"), h.app("e", "e1"), h.app("f", "f1"), h.app("g", "g1"), h.app("h", "h1"))), `"memoryMib":128`, `"memoryMib":-1`), "instances[0].config.resources.memoryMib"},
	}
	for _, bad := range refused {
		h.writeRaw(t, []byte(bad.doc))
		r := h.waitFor(t, "the refusal in the report", func(r *reported.HostReportedState) bool { return r.Message != "" })
		if !strings.Contains(r.Message, "refused") || !strings.Contains(r.Message, bad.why) || !strings.Contains(r.Message, "keeps converging on the document it accepted before") {
			t.Fatalf("message %q does not say it was refused for %s", r.Message, bad.why)
		}
		if string(r.AcceptedDigest) != good || instance(r, "a") == nil || instance(r, "a").State != reported.InstanceRunning {
			t.Fatalf("the refused document changed the host: %+v", r)
		}
		if n := utf8.RuneCountInString(r.Message); n > reported.MaxMessageLen {
			t.Fatalf("message of %d characters", n)
		}
		h.writeRaw(t, []byte(mustJSON(t, doc(h.app("a", "a1")))))
		h.waitFor(t, "the message cleared", func(r *reported.HostReportedState) bool { return r.Message == "" })
	}

	// Refused again, then the daemon restarts: the last accepted document
	// is re-applied from the database, and the message is set again.
	h.writeRaw(t, []byte(`not json`))
	h.waitFor(t, "the refusal", func(r *reported.HostReportedState) bool { return r.Message != "" })
	stop()
	os.Remove(h.reportPath())
	_, v2, _ := h.start(t)
	r := h.waitFor(t, "a report from the restarted daemon", func(r *reported.HostReportedState) bool { return r.Message != "" })
	if string(r.AcceptedDigest) != good || instance(r, "a") == nil {
		t.Fatalf("the restarted daemon lost the last good document: %+v", r)
	}
	if got := pids(t, v2)["a"].PID; got != pid {
		t.Fatalf("a was restarted (pid %d → %d)", pid, got)
	}
}

func mustJSON(t *testing.T, d *desired.HostDesiredState) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestATruncatedDocumentNeverDeletesAVolume(t *testing.T) {
	h := newHost(t)
	_, v, _ := h.start(t)
	h.write(t, doc(h.app("a", "a1")))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	volPath := filepath.Join(h.dir, "volumes", "a-data.img")
	if _, err := os.Stat(volPath); err != nil {
		t.Fatal(err)
	}

	// The document arrives cut down to nothing: instances are
	// authoritative, so a is stopped and forgotten; its volume stays.
	h.write(t, doc())
	r := h.waitFor(t, "a forgotten", func(r *reported.HostReportedState) bool { return len(r.Instances) == 0 })
	if _, err := os.Stat(volPath); err != nil {
		t.Fatalf("a truncated document deleted a volume: %v", err)
	}
	if vol := volumeOf(r, "a-data"); vol == nil || vol.State != reported.VolumeDetached || vol.AppId != "a" {
		t.Fatalf("the dropped volume is reported as %+v", vol)
	}
	// The report drops a as soon as the document does; its worker stops
	// the guest after that pass, and asks for another pass when done.
	if !h.until(t, time.Minute, func() bool { _, up := pids(t, v)["a"]; return !up }) {
		t.Fatal("a forgotten app still has a guest")
	}

	// While an instance still names it, absent is held back.
	d := doc(h.app("a", "a2", withState(desired.StateStopped)))
	d.Volumes[0].DesiredState = desired.Absent
	h.write(t, d)
	h.waitFor(t, "the held-back message", func(r *reported.HostReportedState) bool {
		vol := volumeOf(r, "a-data")
		return vol != nil && strings.Contains(vol.Message, "held back")
	})
	if _, err := os.Stat(volPath); err != nil {
		t.Fatalf("a volume in use was deleted: %v", err)
	}

	// Only an explicit absent with no user deletes it, and it stays
	// reported deleted even once the document stops naming it.
	d = doc()
	d.Volumes = []desired.DesiredVolume{{VolumeId: "a-data", AppId: "a", SizeBytes: 1 << 20, DesiredState: desired.Absent}}
	h.write(t, d)
	h.waitFor(t, "the volume deleted", func(r *reported.HostReportedState) bool {
		vol := volumeOf(r, "a-data")
		return vol != nil && vol.State == reported.VolumeDeleted
	})
	if _, err := os.Stat(volPath); !os.IsNotExist(err) {
		t.Fatalf("the absent volume is still there: %v", err)
	}
	h.write(t, doc())
	r = h.waitFor(t, "a later report", func(r *reported.HostReportedState) bool { return len(r.Volumes) == 1 })
	if vol := volumeOf(r, "a-data"); vol.State != reported.VolumeDeleted {
		t.Fatalf("the deleted volume is reported as %+v", vol)
	}
}

func TestACrashingAppIsRestartedWithBackoffThenOutOfRestartsUntilANewDeployment(t *testing.T) {
	h := newHost(t)
	h.expectRestarts()
	_, v, _ := h.start(t)
	h.write(t, doc(h.app("a", "a1", withEnv("FAKE_EXIT_AFTER_MS", "150", "FAKE_EXIT_CODE", "3"))))
	r := h.waitFor(t, "out of restarts", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a != nil && strings.HasPrefix(a.Message, "out of restarts")
	})
	a := instance(r, "a")
	if a.State != reported.InstanceFailed || a.RestartCount != 2 || a.LastExitCode == nil || *a.LastExitCode != 3 {
		t.Fatalf("a: %+v", a)
	}
	if !strings.Contains(a.Message, "the app exited with code 3") || !strings.Contains(a.Message, "new deploymentId") {
		t.Fatalf("message %q", a.Message)
	}
	// Terminal: nothing more happens to this deployment, over ten passes
	// and well past its longest backoff (400 ms).
	passes, since := 0, time.Now()
	h.deadlineWait(t, func() bool { passes++; return passes > 10 && time.Since(since) > 1500*time.Millisecond })
	r = h.readReport(t)
	if a := instance(r, "a"); a.RestartCount != 2 || a.State != reported.InstanceFailed {
		t.Fatalf("out of restarts was not terminal: %+v", a)
	}
	if st, ok := pids(t, v)["a"]; ok && st.State == vmm.Running {
		t.Fatal("a guest runs for an app out of restarts")
	}

	// A new deployment starts afresh with a fresh budget.
	h.write(t, doc(h.app("a", "a2")))
	r = h.waitFor(t, "a2 running", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a.DeploymentId == "a2" && a.State == reported.InstanceRunning
	})
	if a := instance(r, "a"); a.RestartCount != 0 || a.Message != "" {
		t.Fatalf("a2: %+v", a)
	}
}

func TestRestartsWaitForTheirBackoff(t *testing.T) {
	h := newHost(t)
	h.expectRestarts()
	_, v, _ := h.start(t)
	app := h.app("a", "a1")
	app.Config.RestartPolicy = desired.RestartPolicy{MaxRestarts: 10, InitialBackoffMs: 800, MaxBackoffMs: 800, BackoffFactor: 2, ResetAfterMs: 600000}
	h.write(t, doc(app))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	if err := v.Crash("a", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now()
	// Between the crash and the restart the report says failed, why, and
	// when the restart comes (a reader may miss that window on a loaded
	// machine, so it is logged, not required).
	sawScheduled := false
	r := h.waitFor(t, "a running again", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		if a.State == reported.InstanceFailed && strings.Contains(a.Message, "signal 9") && strings.Contains(a.Message, "restart 1 of 10 in") {
			sawScheduled = true
		}
		return a.State == reported.InstanceRunning && a.RestartCount == 1
	})
	t.Logf("saw the scheduled restart in a report: %v", sawScheduled)
	if a := instance(r, "a"); a.LastExitCode == nil || *a.LastExitCode != 137 {
		t.Fatalf("a: %+v", a)
	}
	if waited := time.Since(crashed); waited < 800*time.Millisecond {
		t.Fatalf("restarted after %v, before the 800ms backoff", waited)
	}
}

func TestAnAppThatNeverAnswersFailsWithASentenceNamingThePort(t *testing.T) {
	h := newHost(t)
	h.start(t)
	app := h.app("a", "a1", withEnv("FAKE_HEALTH_STATUS", "500"))
	app.Config.HealthCheck.GracePeriodMs, app.Config.HealthCheck.UnhealthyThreshold = 300, 2
	app.Config.RestartPolicy.MaxRestarts = 0
	h.write(t, doc(app))
	r := h.waitFor(t, "a failed", allIn(reported.InstanceFailed, "a"))
	msg := instance(r, "a").Message
	if !strings.Contains(msg, "GET /healthz on port 8080 inside the guest did not answer 2xx: 2 health probes failed after the 300ms grace period") {
		t.Fatalf("message %q", msg)
	}
}

func TestMemoryAdmissionHoldsAStartBackSayingHowMuchIsMissing(t *testing.T) {
	h := newHost(t)
	h.capacityMiB = 384
	d, _, _ := h.start(t)
	h.write(t, doc(h.app("a", "a1", withMemory(256)), h.app("b", "b1", withMemory(256))))
	r := h.waitFor(t, "one running, one pending", func(r *reported.HostReportedState) bool {
		a, b := instance(r, "a"), instance(r, "b")
		return a != nil && b != nil && (a.State == reported.InstanceRunning && b.State == reported.InstancePending ||
			b.State == reported.InstanceRunning && a.State == reported.InstancePending)
	})
	pending := instance(r, "b")
	if pending.State != reported.InstancePending {
		pending = instance(r, "a")
	}
	if pending.Message != "waiting to be started: its host is 128 MiB short of the memory it needs" {
		t.Fatalf("message %q", pending.Message)
	}
	if r.Allocatable.MemoryMib != 128 {
		t.Fatalf("allocatable %d MiB", r.Allocatable.MemoryMib)
	}
	if err := d.Pass(context.Background()); err != nil {
		t.Fatalf("a pass with an app held back: %v", err)
	}
}

func TestAnAppWaitingForASlotIsReportedAndTheOthersRecordsStillPersist(t *testing.T) {
	h := newHost(t)
	h.maxApps = 1
	d, _, stop := h.start(t)
	h.write(t, doc(h.app("a", "a1"), h.app("b", "b1")))
	r := h.waitFor(t, "one running, one waiting for a slot", func(r *reported.HostReportedState) bool {
		a, b := instance(r, "a"), instance(r, "b")
		return a != nil && b != nil && (a.State == reported.InstanceRunning) != (b.State == reported.InstanceRunning)
	})
	waiting := instance(r, "b")
	if waiting.State == reported.InstanceRunning {
		waiting = instance(r, "a")
	}
	if waiting.State != reported.InstancePending || waiting.Message != "waiting to be started: every slot of this host is taken (max_apps = 1)" {
		t.Fatalf("the app without a slot: %+v", waiting)
	}
	// The database takes no record before its slot; the waiting app's
	// record stays in memory and the pass persists the rest.
	if err := d.Pass(context.Background()); err != nil {
		t.Fatalf("a pass with an app waiting for a slot: %v", err)
	}
	stop()
	s, err := db.Open(context.Background(), filepath.Join(h.dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[string(waiting.AppId)].AppID != "" {
		t.Fatalf("persisted records: %v", recs)
	}
}

func TestAnIdleOnRequestAppSleepsAndAWakeBringsItBackWithoutSpendingRestarts(t *testing.T) {
	h := newHost(t)
	d, v, _ := h.start(t)
	app := h.app("a", "a1", withState(desired.StateOnRequest))
	idle := desired.IdleTimeoutMs(60000)
	app.IdleTimeoutMs = &idle
	h.write(t, doc(app))
	h.waitFor(t, "a's first boot", allIn(reported.InstanceRunning, "a"))

	h.offset.Store(int64(61 * time.Second))
	h.waitFor(t, "a asleep", allIn(reported.InstanceIdle, "a"))
	if _, up := pids(t, v)["a"]; up {
		t.Fatal("a sleeping app has a guest")
	}
	if _, err := os.Stat(filepath.Join(h.dir, "snap", "a", "stamp.json")); err != nil {
		t.Fatalf("no snapshot: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for range 3 { // concurrent callers share one wake
		go func() { errs <- d.Wake(ctx, "a") }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	r := h.waitFor(t, "a awake", allIn(reported.InstanceRunning, "a"))
	if a := instance(r, "a"); a.RestartCount != 0 {
		t.Fatalf("a wake spent the restart budget: %+v", a)
	}
	if n := len(pids(t, v)); n != 1 {
		t.Fatalf("%d guests after three wakes", n)
	}
}
