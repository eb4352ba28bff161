package explain

import (
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/reported"
)

func TestVolumeStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	present := desired.DesiredVolume{VolumeId: "v", AppId: "a", SizeBytes: 1000, DesiredState: desired.Present}
	absent := present
	absent.DesiredState = desired.Absent
	seeding := plan.VolumeWork{Kind: plan.Provision, SizeBytes: 1024, Since: now.Add(-90 * time.Second), Seeding: true, ObjectKey: "seeds/big.tar.gz"}
	at := func(w plan.VolumeWork, ph plan.SeedPhase, fetched, total, unpacked int64, e *plan.EarlierSeed) plan.VolumeWork {
		w.Phase, w.Fetched, w.Total, w.Unpacked, w.Earlier = ph, fetched, total, unpacked, e
		return w
	}
	earlier := now.Add(-time.Hour)
	for _, c := range []struct {
		name  string
		v     desired.DesiredVolume
		f     plan.VolumeFacts
		state reported.VolumeState
		size  uint64
		says  []string // "" alone: no message
	}{
		{"on the host", present, plan.VolumeFacts{Listed: true, SizeBytes: 4096, DevicePath: "/v.img", Usage: &reported.Usage{TotalBytes: 4000, UsedBytes: 10}}, reported.VolumeReady, 4096, []string{""}},
		{"gone from the host, its fill with it", present, plan.VolumeFacts{Usage: &reported.Usage{TotalBytes: 4000}}, reported.VolumePending, 1024, []string{""}},
		{"on the host, its shrink refused", present, plan.VolumeFacts{Listed: true, SizeBytes: 4096, Message: "a volume only grows"}, reported.VolumeFailed, 4096, []string{"a volume only grows"}},
		{"on the host, absent held back", absent, plan.VolumeFacts{Listed: true, SizeBytes: 4096, Message: "held back"}, reported.VolumeReady, 4096, []string{"held back"}},
		{"being grown", present, plan.VolumeFacts{Listed: true, SizeBytes: 4096, Message: "old", Work: plan.VolumeWork{Kind: plan.Grow, SizeBytes: 8192, Since: now.Add(-3 * time.Second)}}, reported.VolumeReady, 4096,
			[]string{"being grown to 8192 bytes (for 3s): its guests are down"}},
		{"being deleted", absent, plan.VolumeFacts{Listed: true, SizeBytes: 4096, Work: plan.VolumeWork{Kind: plan.Teardown, Since: now}}, reported.VolumeReady, 4096, []string{"being deleted"}},
		{"asked absent, deleted here", absent, plan.VolumeFacts{Deleted: true, DeletedSizeBytes: 4096}, reported.VolumeDeleted, 4096, []string{""}},
		{"asked absent, never here", absent, plan.VolumeFacts{}, reported.VolumeDeleted, 1024, []string{""}},
		{"being made, waiting for a turn", present, plan.VolumeFacts{Work: at(seeding, plan.SeedQueued, 0, 0, 0, nil)}, reported.VolumePending, 1024,
			[]string{"being made (for 1m30s): waiting for a turn"}},
		{"being made without a seed", present, plan.VolumeFacts{Work: plan.VolumeWork{Kind: plan.Provision, Since: now, Phase: plan.SeedFetching}}, reported.VolumePending, 1024, []string{"being made (for 0s)"}},
		{"fetching", present, plan.VolumeFacts{Message: "could not be made (tried again at …): boom", Work: at(seeding, plan.SeedFetching, 3<<20, 12<<20, 0, nil)}, reported.VolumePending, 1024,
			[]string{`being made from initialContents "seeds/big.tar.gz" (for 1m30s): fetching the archive, 3145728 bytes (3.0 MiB) of 12582912 bytes (12.0 MiB) (25%)`}},
		{"fetching, size not yet known", present, plan.VolumeFacts{Work: at(seeding, plan.SeedFetching, 100, 0, 0, nil)}, reported.VolumePending, 1024, []string{"100 bytes so far"}},
		{"unpacking", present, plan.VolumeFacts{Work: at(seeding, plan.SeedUnpacking, 12<<20, 12<<20, 5<<20, nil)}, reported.VolumePending, 1024,
			[]string{"unpacking the archive (12582912 bytes (12.0 MiB) fetched), 5242880 bytes (5.0 MiB) of files unpacked"}},
		{"formatting", present, plan.VolumeFacts{Work: at(seeding, plan.SeedFormatting, 12<<20, 12<<20, 11<<20, nil)}, reported.VolumePending, 1024, []string{"writing the filesystem"}},
		{"resumed after a restart", present, plan.VolumeFacts{Work: at(seeding, plan.SeedUnpacking, 12<<20, 12<<20, 0, &plan.EarlierSeed{StartedAt: earlier, Fetched: 12 << 20, Resumed: true})}, reported.VolumePending, 1024,
			[]string{"resumed: an attempt begun at 2026-12-02T05:00:00Z was interrupted by a restart after fetching the whole archive", "without fetching it again"}},
		{"restarted after a restart", present, plan.VolumeFacts{Work: at(seeding, plan.SeedFetching, 1, 12<<20, 0, &plan.EarlierSeed{StartedAt: earlier, Fetched: 6 << 20})}, reported.VolumePending, 1024,
			[]string{"restarted: an attempt begun at 2026-12-02T05:00:00Z was interrupted by a restart after fetching 6291456 bytes (6.0 MiB)", "fetched again from the start"}},
		{"its making failed", present, plan.VolumeFacts{Message: "could not be made: boom"}, reported.VolumeFailed, 1024, []string{"could not be made: boom"}},
		{"not made yet", present, plan.VolumeFacts{}, reported.VolumePending, 1024, []string{""}},
	} {
		got := VolumeStatus(c.v, c.f, now)
		if got.State != c.state || got.SizeBytes != c.size || got.VolumeId != "v" || got.AppId != "a" {
			t.Errorf("%s: %+v; want %s at %d bytes", c.name, got, c.state, c.size)
		}
		for _, s := range c.says {
			if s == "" && got.Message != "" || !strings.Contains(got.Message, s) {
				t.Errorf("%s: message %q; want it to say %q", c.name, got.Message, s)
			}
		}
		if c.f.Listed && (got.DevicePath != c.f.DevicePath || got.Usage != c.f.Usage) || !c.f.Listed && got.Usage != nil {
			t.Errorf("%s: device %q, usage %+v", c.name, got.DevicePath, got.Usage)
		}
	}
}

func TestVolumeHoldsBack(t *testing.T) {
	now := time.Now()
	if got := VolumeHoldsBack(plan.VolumeWork{}, now); got != "" {
		t.Errorf("no work holds back: %q", got)
	}
	if got := VolumeHoldsBack(plan.VolumeWork{Kind: plan.Grow, SizeBytes: 2048, Since: now}, now); !strings.HasPrefix(got, "being grown to 2048 bytes") {
		t.Errorf("a grow holds back with %q", got)
	}
}

func TestVolumeActionAndFailureSentences(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct{ got, want string }{
		{VolumeActionMessage(plan.VolumeAction{Kind: plan.Blocked, By: "a"}, 0, 0), "asked absent but held back: app a still uses it; it is deleted once no instance in the document names it"},
		{VolumeActionMessage(plan.VolumeAction{Kind: plan.RefuseShrink}, 4096, 512), "a volume only grows: it is 4096 bytes and the document asks for 512; ask for 4096 or more (shrinking would destroy data)"},
		{VolumeFailedMessage(plan.VolumeAction{Kind: plan.Provision}, 512, at, "boom"), "could not be made (tried again at 2026-12-02T06:00:00Z): boom"},
		{VolumeFailedMessage(plan.VolumeAction{Kind: plan.Grow}, 8192, at, "boom"), "could not be grown to 8192 bytes (tried again at 2026-12-02T06:00:00Z): boom"},
		{VolumeFailedMessage(plan.VolumeAction{Kind: plan.Teardown}, 0, at, "boom"), "could not be deleted (tried again at 2026-12-02T06:00:00Z): boom"},
	} {
		if c.got != c.want {
			t.Errorf("%q\nwant %q", c.got, c.want)
		}
	}
}

func TestANoDiskSentenceNamesTheVolumeItsSizeAndTheFreeSpace(t *testing.T) {
	msg := NoDiskMessage(plan.VolumeAction{Kind: plan.NoDisk, Tried: plan.Provision, VolumeID: "vol-a", SizeBytes: 16 << 20, RoomBytes: 10 << 20})
	for _, want := range []string{"volume vol-a", "16777216 bytes (16.0 MiB)", "10485760 bytes (10.0 MiB) free"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if got := VolumeActionMessage(plan.VolumeAction{Kind: plan.NoDisk, VolumeID: "vol-a", SizeBytes: 16 << 20, RoomBytes: 10 << 20}, 0, 0); got != NoDiskMessage(plan.VolumeAction{Kind: plan.NoDisk, VolumeID: "vol-a", SizeBytes: 16 << 20, RoomBytes: 10 << 20}) {
		t.Errorf("a NoDisk action says %q", got)
	}
}

// missingDoc lists one volume present and one absent.
var missingDoc = &desired.HostDesiredState{Volumes: []desired.DesiredVolume{
	{VolumeId: "coming", AppId: "a", DesiredState: desired.Present},
	{VolumeId: "going", AppId: "b", DesiredState: desired.Absent},
}}

func TestCheckpointStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ready := now.Add(-time.Minute)
	there := plan.VolumeOf{There: true}
	failedJob := plan.JobFacts{Failed: true, Attempts: 2, RetryAt: now.Add(4 * time.Second), Message: "freeze: boom"}
	for _, c := range []struct {
		name  string
		vol   string
		f     plan.CheckpointFacts
		state reported.CheckpointState
		says  string
	}{
		{"made", "coming", plan.CheckpointFacts{Exists: true, Reference: "checkpoints/c.img", ReadyAt: ready, Create: failedJob}, reported.CheckpointReady, ""},
		{"its job failed", "coming", plan.CheckpointFacts{Create: failedJob, Volume: there}, reported.CheckpointFailed, "could not be made (attempt 2; the next try is in 4s): freeze: boom"},
		{"its job runs", "coming", plan.CheckpointFacts{Create: plan.JobFacts{Running: true}, Volume: there}, reported.CheckpointPending, ""},
		{"its volume to be made", "coming", plan.CheckpointFacts{}, reported.CheckpointPending, "waiting for volume coming to be made (volumes[0])"},
		{"its volume's making failed", "coming", plan.CheckpointFacts{Volume: plan.VolumeOf{Failure: "disk full"}}, reported.CheckpointPending, "waiting for volume coming to be made (volumes[0]), which failed: disk full"},
		{"its volume asked absent", "going", plan.CheckpointFacts{}, reported.CheckpointFailed, "volume going is asked absent (volumes[1].desiredState), so there is nothing to checkpoint"},
		{"its volume deleted and unlisted", "gone", plan.CheckpointFacts{Volume: plan.VolumeOf{Deleted: true}}, reported.CheckpointFailed, "volume gone was deleted from this host"},
		{"its volume never heard of", "ghost", plan.CheckpointFacts{}, reported.CheckpointFailed, "add it to volumes, or point this checkpoint at a volume the host holds"},
	} {
		cp := desired.DesiredCheckpoint{CheckpointId: "c", VolumeId: desired.VolumeId(c.vol), DesiredState: desired.Present}
		got := CheckpointStatus(missingDoc, cp, c.f, now)
		if got.State != c.state || got.CheckpointId != "c" || string(got.VolumeId) != c.vol {
			t.Errorf("%s: %+v; want %s", c.name, got, c.state)
		}
		if c.says == "" && got.Message != "" || !strings.Contains(got.Message, c.says) {
			t.Errorf("%s: message %q; want %q", c.name, got.Message, c.says)
		}
		if c.f.Exists && (got.Reference != c.f.Reference || got.ReadyAt == nil || !got.ReadyAt.Equal(ready)) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

func TestExportStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	there := plan.VolumeOf{There: true}
	for _, c := range []struct {
		name     string
		vol, app string
		f        plan.ExportFacts
		state    reported.ExportState
		says     string
	}{
		{"written", "coming", "a", plan.ExportFacts{Exists: true, SizeBytes: 77, ReadyAt: now}, reported.ExportReady, ""},
		{"being written", "coming", "a", plan.ExportFacts{Write: plan.JobFacts{Running: true}, Volume: there}, reported.ExportPreparing, ""},
		{"being written, its volume gone", "ghost", "a", plan.ExportFacts{Write: plan.JobFacts{Running: true}}, reported.ExportPreparing, ""},
		{"its job failed", "coming", "a", plan.ExportFacts{Write: plan.JobFacts{Failed: true, Attempts: 1, RetryAt: now.Add(-time.Second), Message: "s3: denied"}, Volume: there}, reported.ExportFailed,
			"could not be written (attempt 1; the next try is in 0s): s3: denied"},
		{"waiting", "coming", "a", plan.ExportFacts{Volume: there}, reported.ExportPending, ""},
		{"its volume asked absent", "going", "b", plan.ExportFacts{}, reported.ExportFailed, "nothing to export: ask for it present, or point this export at a volume the host holds"},
		{"its volume never heard of, for an app", "ghost-data", "ghost", plan.ExportFacts{}, reported.ExportFailed,
			"volume ghost-data is not one of this document's volumes and this host has none by that name, so nothing will make it: add it to volumes with appId ghost"},
	} {
		e := desired.DesiredExport{ExportId: "e", AppId: desired.AppId(c.app), VolumeId: desired.VolumeId(c.vol), DesiredState: desired.Present}
		got := ExportStatus(missingDoc, e, c.f, now)
		if got.State != c.state || got.ExportId != "e" {
			t.Errorf("%s: %+v; want %s", c.name, got, c.state)
		}
		if c.says == "" && got.Message != "" || !strings.Contains(got.Message, c.says) {
			t.Errorf("%s: message %q; want %q", c.name, got.Message, c.says)
		}
		if n := len([]rune(got.Message)); n > reported.MaxMessageLen {
			t.Errorf("%s: %d characters, more than a report message holds", c.name, n)
		}
		if c.f.Exists && (got.SizeBytes != 77 || got.ReadyAt == nil) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}
