package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/term"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/reported"
)

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time { t := now.Add(-d); return &t }

func exampleReport() *reported.HostReportedState {
	exit := 137
	return &reported.HostReportedState{HostId: "host-1", ReportedAt: now.Add(-2 * time.Second), Instances: []reported.Instance{
		{AppId: "web", DeploymentId: "web-7", State: reported.InstanceRunning, HostPort: 21000, GuestIpv4: "10.201.0.2",
			StartedAt: ago(3*time.Hour + 5*time.Minute), LastHealthyAt: ago(time.Second), RestartCount: 2, LastExitCode: &exit,
			Compute: &reported.Compute{MemoryUsedBytes: 64 << 20, MemoryTotalBytes: 256 << 20, CpuShare: 0.125, MeasuredAt: now},
			Meters:  &reported.Meters{RunningMs: 3_600_000, IdleMs: 0, CpuMs: 1500, RxBytes: 2048, TxBytes: 10 << 20}},
		{AppId: "blog", DeploymentId: "blog-1", State: reported.InstanceIdle, HostPort: 21008},
		{AppId: "api", DeploymentId: "api-3", State: reported.InstanceFailed, Message: "out of restarts: it was restarted 5 times"},
	}}
}

func TestPsIsOneAlignedRowPerAppWithUptimeMemoryAndMessage(t *testing.T) {
	var out bytes.Buffer
	renderPS(&out, term.Plain(), "host-1", psRows(exampleReport(), now))
	want := `APP   STATE    DEPLOYMENT  PORT   UPTIME  MEMORY              MESSAGE
web   running  web-7       21000  3h05m   64.0 MiB/256.0 MiB
blog  idle     blog-1      21008  -       -
api   failed   api-3       -      -       -                   out of restarts: it was restarted 5 times
`
	if out.String() != want {
		t.Fatalf("ps:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestPsOfAnEmptyHostSaysSo(t *testing.T) {
	var out bytes.Buffer
	renderPS(&out, term.Plain(), "host-1", psRows(&reported.HostReportedState{}, now))
	if out.String() != "no apps on host-1\n" {
		t.Fatalf("ps: %q", out.String())
	}
}

func TestPsRowsCarryTheUptimeInSecondsForScripts(t *testing.T) {
	rows := psRows(exampleReport(), now)
	if rows[0].UptimeSeconds != 3*3600+5*60 || rows[0].MemoryUsedBytes != 64<<20 || rows[1].UptimeSeconds != 0 {
		t.Fatalf("rows: %+v", rows)
	}
}

func TestPsPaintsTheStateWithoutBreakingTheColumns(t *testing.T) {
	var plain, painted bytes.Buffer
	rows := psRows(exampleReport(), now)
	renderPS(&plain, term.Plain(), "host-1", rows)
	renderPS(&painted, term.Always(), "host-1", rows)
	stripped := strings.NewReplacer(string(term.Green), "", string(term.Red), "", "\x1b[0m", "").Replace(painted.String())
	if stripped != plain.String() || !strings.Contains(painted.String(), string(term.Red)+"failed") {
		t.Fatalf("painted ps:\n%q\nplain:\n%q", painted.String(), plain.String())
	}
}

func TestStatusShowsTheWholeInstanceAndWhatBelongsToIt(t *testing.T) {
	in := exampleReport().Instances[0]
	st := control.AppStatus{HostId: "host-1", ReportedAt: now.Add(-2 * time.Second), Instance: in,
		Volumes:     []reported.Volume{{VolumeId: "web-data", State: reported.VolumeReady, SizeBytes: 8 << 20, DevicePath: "/v/web-data.ext4", Usage: &reported.Usage{UsedBytes: 1 << 20, TotalBytes: 7 << 20}}},
		Checkpoints: []reported.Checkpoint{{CheckpointId: "nightly", State: reported.CheckpointReady, Reference: "checkpoints/nightly", ReadyAt: ago(time.Hour)}},
		Exports:     []reported.Export{{ExportId: "backup", State: reported.ExportFailed, Message: "the bucket refused it"}},
	}
	var out bytes.Buffer
	renderStatus(&out, term.Plain(), st, now)
	want := `web  running  deployment web-7  (reported by host-1 2s ago)
  host port     21000
  guest ipv4    10.201.0.2
  started       2026-12-01T06:55:00Z (3h05m ago)
  last healthy  2026-12-01T09:59:59Z (1s ago)
  restarts      2
  last exit     137
  memory        64.0 MiB used of 256.0 MiB
  cpu share     12.5%
  meters        running 1h00m, idle 0s, cpu 1s, rx 2.0 KiB, tx 10.0 MiB
volume web-data  ready  8.0 MiB, 1.0 MiB used of 7.0 MiB  /v/web-data.ext4
checkpoint nightly  ready  ready 2026-12-01T09:00:00Z (1h00m ago)
  reference     checkpoints/nightly
export backup  failed
  message       the bucket refused it
`
	if out.String() != want {
		t.Fatalf("status:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestAnEventReadsAsOneLine(t *testing.T) {
	e := control.Event{At: now, Subject: control.SubjectInstance, ID: "api", Verb: control.VerbFailed, From: "starting", To: "failed", Message: "nothing answered on port 3000"}
	if got := eventLine(term.Plain(), e); got != "10:00:00  instance   api              failed     starting → failed: nothing answered on port 3000" {
		t.Fatalf("%q", got)
	}
	e = control.Event{At: now, Subject: control.SubjectHost, ID: "host-1", Verb: control.VerbReadable}
	if got := eventLine(term.Plain(), e); got != "10:00:00  host       host-1           readable" {
		t.Fatalf("%q", got)
	}
}

func TestDurationsAndSizesReadShort(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 450 * time.Millisecond: "450ms", 45 * time.Second: "45s",
		192 * time.Second: "3m12s", 2*time.Hour + 5*time.Minute: "2h05m", 99 * time.Hour: "4d03h", -time.Second: "0s"} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[uint64]string{512: "512 B", 1536: "1.5 KiB", 64 << 20: "64.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := bytesIEC(n); got != want {
			t.Errorf("bytesIEC(%d) = %q, want %q", n, got, want)
		}
	}
}
