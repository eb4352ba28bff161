package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/checkpoint/schedule"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store"
)

func TestScheduledCheckpointsAreListedUnderTheirVolumeInTheReport(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := store.NewDir(filepath.Join(h.dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.Open(context.Background(), checkpoint.Options{Dir: filepath.Join(h.dir, "scheduled"), Objects: objects, Prefix: "checkpoints/scheduled/", UploadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	taken := make(chan schedule.Event, 16)
	deps.Schedule, err = schedule.New(schedule.Options{
		Store: cps, Dir: filepath.Join(h.dir, "schedule"), Clock: clk,
		Default: schedule.Policy{Interval: time.Hour, Keep: 2},
		OnEvent: func(e schedule.Event) {
			if e.Kind == "taken" {
				taken <- e
			}
		},
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.run(t, deps)
	h.write(t, doc(h.app("a", "a1")))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))

	// Once the schedule has seen the volume, an hour later it takes one,
	// and another an hour after that.
	for clk.Waiting() == 0 { // its first round, at the start, is done
		armed := clk.Armed()
		if clk.Waiting() > 0 {
			break
		}
		<-armed
	}
	var ids []string
	for len(ids) < 2 {
		// The schedule waits on the clock before each move.
		armed := clk.Armed()
		clk.Advance(time.Hour)
		select {
		case <-armed: // its round is done
		case <-time.After(time.Minute):
			t.Fatal("the schedule never waited again")
		}
	drain:
		for {
			select {
			case e := <-taken:
				ids = append(ids, e.ID)
			default:
				break drain
			}
		}
		if clk.Now().After(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)) {
			t.Fatal("no two scheduled checkpoints in six hours of an hourly schedule")
		}
	}
	r := h.waitFor(t, "the two scheduled checkpoints listed under a-data", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "a-data")
		return v != nil && len(v.Checkpoints) == 2
	})
	ids = ids[len(ids)-2:]
	for i, c := range volumeOf(r, "a-data").Checkpoints {
		if want := "checkpoints/scheduled/" + ids[i] + checkpoint.ObjectSuffix; string(c.ObjectKey) != want || len(c.Digest) != 64 || c.TakenAt.IsZero() {
			t.Errorf("checkpoint %d is listed as %+v; want %s with its digest and time", i, c, want)
		}
	}
}
