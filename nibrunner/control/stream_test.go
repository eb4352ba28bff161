package control

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// writeReport replaces the report at path as the daemon does (rename).
func writeReport(t *testing.T, path string, r *reported.HostReportedState) {
	t.Helper()
	b, _ := json.Marshal(r)
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func TestStatusIsTheAppsInstanceVolumeCheckpointsAndExports(t *testing.T) {
	accepted := &desired.HostDesiredState{
		Instances: []desired.DesiredInstance{{AppId: "web", VolumeId: "shared"}},
		Exports:   []desired.DesiredExport{{ExportId: "x1", AppId: "web"}, {ExportId: "x2", AppId: "blog"}},
	}
	c, _, report := serveWith(t, func(dir string) *Server {
		return &Server{Apps: &apps{}, ReportPath: filepath.Join(dir, "reported.json"),
			Accepted: func() *desired.HostDesiredState { return accepted }}
	})
	r := rep("", inst("web", reported.InstanceRunning, ""), inst("blog", reported.InstanceIdle, ""))
	r.Volumes = []reported.Volume{{VolumeId: "shared", AppId: "unknown", State: reported.VolumeReady}, {VolumeId: "blog-data", AppId: "blog", State: reported.VolumeReady}}
	r.Checkpoints = []reported.Checkpoint{{CheckpointId: "c1", VolumeId: "shared", State: reported.CheckpointReady}, {CheckpointId: "c2", VolumeId: "blog-data"}}
	r.Exports = []reported.Export{{ExportId: "x1", State: reported.ExportReady}, {ExportId: "x2", State: reported.ExportPending}}
	writeReport(t, report, r)

	st, err := c.App(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if st.Instance.AppId != "web" || len(st.Volumes) != 1 || st.Volumes[0].VolumeId != "shared" ||
		len(st.Checkpoints) != 1 || st.Checkpoints[0].CheckpointId != "c1" || len(st.Exports) != 1 || st.Exports[0].ExportId != "x1" {
		t.Fatalf("status of web: %+v", st)
	}
	if _, err := c.App(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), `no app "nope" on this host`) {
		t.Fatalf("an unknown app: %v", err)
	}
}

func TestLogsGiveTheTailOfEachThenFollowAcrossATruncation(t *testing.T) {
	var tenant, console string
	c, _, report := serveWith(t, func(dir string) *Server {
		tenant, console = filepath.Join(dir, "tenant.log"), filepath.Join(dir, "console.log")
		return &Server{Apps: &apps{}, ReportPath: filepath.Join(dir, "reported.json"),
			Logs: func(app string) []LogFile {
				return []LogFile{{Source: "console", Path: console}, {Source: "tenant", Path: tenant}}
			}}
	})
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	os.WriteFile(console, []byte("boot 1\nboot 2\nboot 3\n"), 0o644)
	os.WriteFile(tenant, []byte("t1\nt2\nt3\nt4\n"), 0o644)

	var got []string
	collect := func(l LogLine) error { got = append(got, l.Source+" "+l.Line); return nil }
	if err := c.Logs(context.Background(), "web", 2, false, collect); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ","); s != "console boot 2,console boot 3,tenant t3,tenant t4" {
		t.Fatalf("tail 2: %s", s)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lines := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- c.Logs(ctx, "web", 1, true, func(l LogLine) error { lines <- l.Source + " " + l.Line; return nil })
	}()
	next := func(want string) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("followed %q, want %q", l, want)
			}
		case <-ctx.Done():
			t.Fatalf("never followed %q", want)
		}
	}
	// The tail first: after it, every line written is followed.
	next("console boot 3")
	next("tenant t4")
	// Written in two pieces: only the whole line comes through.
	f, _ := os.OpenFile(tenant, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("t5 par")
	f.Sync()
	f.WriteString("t of it\n")
	f.Close()
	next("tenant t5 part of it")
	// A new start truncates the console: it is read from its start.
	os.WriteFile(console, []byte("boot again\n"), 0o644)
	next("console boot again")
	// Even when the new boot has written past where the old one ended by
	// the next look.
	os.WriteFile(console, []byte("the third boot prints a longer first line\n"), 0o644)
	next("console the third boot prints a longer first line")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("a follow ended by its caller: %v", err)
	}
}

func TestLogsOfAnAppNotOnThisHostSaySo(t *testing.T) {
	c, _, report := serveWith(t, func(dir string) *Server {
		return &Server{Apps: &apps{}, ReportPath: filepath.Join(dir, "reported.json"),
			Logs: func(string) []LogFile { return []LogFile{{Source: "tenant", Path: filepath.Join(dir, "none")}} }}
	})
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	err := c.Logs(context.Background(), "blog", 10, false, func(LogLine) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `no app "blog" on this host`) {
		t.Fatalf("%v", err)
	}
	err = c.Logs(context.Background(), "web", 10, false, func(LogLine) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "no log of web yet") {
		t.Fatalf("%v", err)
	}
}

func TestATailThatIsNoNumberOfLinesIsRefusedSayingWhatToGive(t *testing.T) {
	c, _, report := serveWith(t, func(dir string) *Server {
		return &Server{Apps: &apps{}, ReportPath: filepath.Join(dir, "reported.json"),
			Logs: func(string) []LogFile { return []LogFile{{Source: "tenant", Path: filepath.Join(dir, "none")}} }}
	})
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	err := c.Logs(context.Background(), "web", -5, false, func(LogLine) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `tail: "-5" is not a number of lines: give ?tail=N`) {
		t.Fatalf("%v", err)
	}
}

func TestEventsFollowTheReportsTheDaemonWrites(t *testing.T) {
	var report string
	c, _, _ := serveWith(t, func(dir string) *Server {
		report = filepath.Join(dir, "reported.json")
		// What the last run left: the baseline, not an event.
		writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
		return &Server{Apps: &apps{}, ReportPath: report}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs := make(chan Event, 16)
	done := make(chan error, 1)
	go func() { done <- c.Events(ctx, 0, true, func(e Event) error { evs <- e; return nil }) }()
	next := func() Event {
		t.Helper()
		select {
		case e := <-evs:
			return e
		case <-ctx.Done():
			t.Fatal("no event came")
		}
		return Event{}
	}
	writeReport(t, report, rep("", inst("web", reported.InstanceIdle, "")))
	e := next()
	if e.Verb != VerbSlept || e.ID != "web" || e.Seq != 1 {
		t.Fatalf("first event %+v, want web slept as #1", e)
	}
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	if e := next(); e.Verb != VerbWoke || e.Seq != 2 {
		t.Fatalf("second event %+v, want web woke as #2", e)
	}
	cancel()
	<-done
	// Without follow: what is kept, then the end.
	var seen []Verb
	if err := c.Events(context.Background(), 0, false, func(e Event) error { seen = append(seen, e.Verb); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != VerbSlept || seen[1] != VerbWoke {
		t.Fatalf("kept events: %v", seen)
	}
}

func TestATailLongerThanTheLogReadsOnIntoItsRotatedFile(t *testing.T) {
	var tenant string
	c, _, report := serveWith(t, func(dir string) *Server {
		tenant = filepath.Join(dir, "tenant.log")
		return &Server{Apps: &apps{}, ReportPath: filepath.Join(dir, "reported.json"),
			Logs: func(string) []LogFile { return []LogFile{{Source: "tenant", Path: tenant, Rotated: tenant + ".1"}} }}
	})
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	os.WriteFile(tenant+".1", []byte("old 1\nold 2\nold 3\n"), 0o644)
	os.WriteFile(tenant, []byte("new 1\n"), 0o644)
	for n, want := range map[int]string{1: "new 1", 3: "old 2,old 3,new 1", -1: "old 1,old 2,old 3,new 1"} {
		var got []string
		if err := c.Logs(context.Background(), "web", n, false, func(l LogLine) error { got = append(got, l.Line); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("tail %d: %s, want %s", n, strings.Join(got, ","), want)
		}
	}
}

func TestAFollowedFileRewrittenPastItsOldEndIsReadFromItsStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte("boot 1 line a\n"), 0o644)
	tl := &tail{path: path}
	if got := tl.more(); len(got) != 1 || got[0] != "boot 1 line a" {
		t.Fatalf("first look: %q", got)
	}
	// Truncated and written longer than before, between two looks.
	os.WriteFile(path, []byte("boot 2 line a\nboot 2 line b\n"), 0o644)
	if got := strings.Join(tl.more(), ","); got != "boot 2 line a,boot 2 line b" {
		t.Fatalf("after the rewrite: %q", got)
	}
}

// TestLogsReadNoLinkAGuestPlantedInPlaceOfItsConsole: the console is in
// the folder the guest's uid owns; a link it put there to a root-only file
// is refused with a sentence, even while the tenant's log is printed.
func TestLogsReadNoLinkAGuestPlantedInPlaceOfItsConsole(t *testing.T) {
	testenv.RequireRoot(t)
	const guest = 900_043
	var tenant, console, secret string
	c, _, report := serveWith(t, func(dir string) *Server {
		vm := filepath.Join(dir, "web", "vm")
		os.MkdirAll(vm, 0o700)
		os.Chown(vm, guest, guest)
		tenant, console, secret = filepath.Join(dir, "web", "tenant.log"), filepath.Join(vm, "console.log"), filepath.Join(dir, "shadow")
		return &Server{Apps: &apps{}, ReportPath: filepath.Join(dir, "reported.json"),
			Logs: func(app string) []LogFile {
				return []LogFile{{Source: "console", Path: console}, {Source: "tenant", Path: tenant}}
			}}
	})
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	os.WriteFile(secret, []byte("root:secret-hash\n"), 0o600)
	os.Symlink(secret, console)
	os.Lchown(console, guest, guest)

	var got []string
	collect := func(l LogLine) error { got = append(got, l.Source+" "+l.Line); return nil }
	err := c.Logs(context.Background(), "web", -1, false, collect)
	if err == nil || !strings.Contains(err.Error(), "refused to open "+console+": is a symbolic link that uid 900043 could have planted") {
		t.Fatalf("logs with only the planted console: %v, %q", err, got)
	}
	os.WriteFile(tenant, []byte("t1\n"), 0o640)
	got = nil
	if err := c.Logs(context.Background(), "web", -1, false, collect); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ","); s != "tenant t1" {
		t.Fatalf("logs printed %q; want the tenant's line only", s)
	}
}
