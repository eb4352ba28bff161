package fake

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

func TestMain(m *testing.M) {
	RunGuestIfAsked()
	os.Exit(m.Run())
}

var _ vmm.VMM = (*VMM)(nil)

func newVMM(t *testing.T, dir string) *VMM {
	t.Helper()
	v, err := New(Options{RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { KillAll(filepath.Join(dir, "run")) })
	return v
}

func spec(app string, env map[string]string) vmm.Spec {
	return vmm.Spec{AppID: app, DeploymentID: "d1", Slot: 1, MemoryMiB: 64, Command: vmm.Command{Environment: env}}
}

func get(t *testing.T, endpoint string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + endpoint + "/")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", endpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func status(t *testing.T, v *VMM, app string) vmm.Status {
	t.Helper()
	l, err := v.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l {
		if s.AppID == app {
			return s
		}
	}
	t.Fatalf("%s not listed", app)
	return vmm.Status{}
}

func TestAGuestAnswersHTTPAndARestartedVMMAdoptsIt(t *testing.T) {
	dir := t.TempDir()
	v := newVMM(t, dir)
	ctx := context.Background()
	st, err := v.Start(ctx, spec("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if code := get(t, st.Endpoint); code != 200 {
		t.Fatalf("status %d", code)
	}
	again := newVMM(t, dir)
	got := status(t, again, "a")
	if got.PID != st.PID || got.State != vmm.Running || got.Endpoint != st.Endpoint || !got.StartedAt.Equal(st.StartedAt) {
		t.Fatalf("adopted %+v, started %+v", got, st)
	}
	if err := again.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(st.PID, 0) == nil {
		// A zombie of our own child may linger until the first VMM reaps it.
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := vmm.StartTicks(st.PID); err == nil {
		t.Fatal("the guest still runs after Stop")
	}
}

func TestACrashedGuestIsExitedWithItsSignalCode(t *testing.T) {
	v := newVMM(t, t.TempDir())
	st, err := v.Start(context.Background(), spec("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	get(t, st.Endpoint)
	if err := v.Crash("a", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for status(t, v, "a").State != vmm.Exited {
		if time.Now().After(deadline) {
			t.Fatal("the crash was not seen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c := status(t, v, "a").ExitCode; c == nil || *c != 137 {
		t.Fatalf("exit code %v", c)
	}
}

func TestAGuestThatExitsOnItsOwnIsSeenExitedEvenByAnAdoptingVMM(t *testing.T) {
	dir := t.TempDir()
	v := newVMM(t, dir)
	_, err := v.Start(context.Background(), spec("a", map[string]string{"FAKE_EXIT_AFTER_MS": "300", "FAKE_EXIT_CODE": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	again := newVMM(t, dir)
	deadline := time.Now().Add(5 * time.Second)
	for status(t, again, "a").State != vmm.Exited {
		if time.Now().After(deadline) {
			t.Fatal("the exit was not seen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c := status(t, again, "a").ExitCode; c == nil || *c != 3 {
		t.Fatalf("exit code %v", c)
	}
}

func TestSetHealthChangesTheAnswer(t *testing.T) {
	v := newVMM(t, t.TempDir())
	st, _ := v.Start(context.Background(), spec("a", map[string]string{"FAKE_HEALTH_STATUS": "503"}))
	if code := get(t, st.Endpoint); code != 503 {
		t.Fatalf("status %d", code)
	}
	v.SetHealth("a", 200)
	if code := get(t, st.Endpoint); code != 200 {
		t.Fatalf("status %d", code)
	}
}

func TestAWakeRestoresAMatchingSnapshotAndBootsColdOtherwise(t *testing.T) {
	v := newVMM(t, t.TempDir())
	ctx := context.Background()
	s := spec("a", nil)
	if _, err := v.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := v.Sleep(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	st, err := v.Wake(ctx, s)
	if err != nil || !st.Restored {
		t.Fatalf("wake %+v %v", st, err)
	}
	get(t, st.Endpoint)
	if err := v.Sleep(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	s.DeploymentID = "d2"
	st, err = v.Wake(ctx, s)
	if err != nil || st.Restored {
		t.Fatalf("a snapshot of another deployment was restored: %+v %v", st, err)
	}
}

func TestInProcessGuestsAnswerToo(t *testing.T) {
	dir := t.TempDir()
	v, err := New(Options{RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap"), InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := v.Start(context.Background(), spec("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if code := get(t, st.Endpoint); code != 200 {
		t.Fatalf("status %d", code)
	}
	if err := v.Stop(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
}

func TestAGuestFromAnEarlierBootIsNotListed(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	os.MkdirAll(run, 0o755)
	if err := vmm.WritePidfile(filepath.Join(run, "old.pid"), vmm.Pidfile{AppID: "old", PID: os.Getpid(), BootID: "another-boot"}); err != nil {
		t.Fatal(err)
	}
	v := newVMM(t, dir)
	l, _ := v.List(context.Background())
	if len(l) != 0 {
		t.Fatalf("listed %+v", l)
	}
	if _, err := os.Stat(filepath.Join(run, "old.pid")); !os.IsNotExist(err) {
		t.Fatal("the stale pidfile was kept")
	}
}

func TestAGuestGetsOnlyItsOwnEnvironmentNotTheDaemons(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "the-daemons-secret")
	v := newVMM(t, t.TempDir())
	st, err := v.Start(context.Background(), spec("a", map[string]string{"TENANT_VAR": "mine"}))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.PID))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(raw), "\x00") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			env[k] = val
		}
	}
	if _, ok := env["AWS_SECRET_ACCESS_KEY"]; ok {
		t.Errorf("the guest inherited the daemon's AWS_SECRET_ACCESS_KEY")
	}
	if _, ok := env["PATH"]; ok {
		t.Errorf("the guest inherited the daemon's PATH")
	}
	if env["TENANT_VAR"] != "mine" {
		t.Errorf("the guest lacks its own TENANT_VAR: %v", env)
	}
	if code := get(t, st.Endpoint); code != 200 {
		t.Fatalf("a guest with only its own environment answered %d", code)
	}
}

// A daemon killed between starting a guest and writing its pidfile leaves
// a guest no pidfile names; the next VMM finds it by the launching marker
// and ends it, and a guest whose pidfile was written is adopted as ever.
func TestAGuestLaunchedWithoutAPidfileIsEndedByTheNextVMM(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	v := newVMM(t, dir)
	ctx := context.Background()
	kept, err := v.Start(ctx, spec("kept", nil))
	if err != nil {
		t.Fatal(err)
	}
	lost, err := v.Start(ctx, spec("lost", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "lost"+launchingSuffix)); !os.IsNotExist(err) {
		t.Fatalf("a launch that wrote its pidfile kept its marker: %v", err)
	}
	if got := Processes(run); got[kept.PID] != "kept" || got[lost.PID] != "lost" || len(got) != 2 {
		t.Fatalf("Processes found %v, want kept %d and lost %d", got, kept.PID, lost.PID)
	}
	// What a kill between cmd.Start and the pidfile leaves behind.
	if err := os.Remove(filepath.Join(run, "lost.pid")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "lost"+launchingSuffix), nil, 0o640); err != nil {
		t.Fatal(err)
	}

	w := newVMM(t, dir)
	select { // v started it, so v reaps it once it is killed
	case <-v.guests["lost"].done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the guest launched without a pidfile (pid %d) is still running", lost.PID)
	}
	if got := Processes(run); got[lost.PID] != "" || got[kept.PID] != "kept" {
		t.Fatalf("after the second VMM opened, guests %v: want only kept (%d)", got, kept.PID)
	}
	if st := status(t, w, "kept"); st.State != vmm.Running || st.PID != kept.PID {
		t.Fatalf("kept was not adopted: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(run, "lost"+launchingSuffix)); !os.IsNotExist(err) {
		t.Fatalf("the marker outlived its orphan: %v", err)
	}
}
