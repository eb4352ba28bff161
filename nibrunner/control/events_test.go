package control

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func rep(msg string, ins ...reported.Instance) *reported.HostReportedState {
	return &reported.HostReportedState{HostId: "h1", ReportedAt: t0, Message: msg, Instances: ins}
}

func inst(app string, st reported.InstanceState, msg string) reported.Instance {
	return reported.Instance{AppId: desired.AppId(app), DeploymentId: "d1", State: st, Message: msg}
}

// line is an event as one comparable sentence.
func line(e Event) string {
	s := fmt.Sprintf("%s %s %s", e.Subject, e.ID, e.Verb)
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf(" %s→%s", e.From, e.To)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func lines(evs []Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, line(e))
	}
	return strings.Join(out, "\n")
}

func TestEachStateChangeIsNamedForWhatHappened(t *testing.T) {
	for _, c := range []struct {
		from, to reported.InstanceState
		want     Verb
	}{
		{"", reported.InstancePending, VerbPending},
		{reported.InstancePending, reported.InstanceStarting, VerbStarting},
		{reported.InstanceStarting, reported.InstanceRunning, VerbStarted},
		{reported.InstanceRunning, reported.InstanceIdle, VerbSlept},
		{reported.InstanceIdle, reported.InstanceRunning, VerbWoke},
		{reported.InstanceIdle, reported.InstanceStarting, VerbWaking},
		{reported.InstanceRunning, reported.InstanceUnhealthy, VerbUnhealthy},
		{reported.InstanceUnhealthy, reported.InstanceRunning, VerbRecovered},
		{reported.InstanceStarting, reported.InstanceFailed, VerbFailed},
		{reported.InstanceRunning, reported.InstanceStopping, VerbStopping},
		{reported.InstanceStopping, reported.InstanceStopped, VerbStopped},
	} {
		if got := instanceVerb(c.from, c.to); got != c.want {
			t.Errorf("%q → %q is %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

func TestTwoReportsGiveWhatChangedBetweenThemAndNothingElse(t *testing.T) {
	prev := rep("",
		inst("web", reported.InstanceRunning, ""),
		inst("blog", reported.InstanceRunning, ""),
		inst("api", reported.InstanceStarting, ""),
		inst("old", reported.InstanceRunning, ""),
	)
	prev.AcceptedDigest = "aaaaaaaaaaaaaaaa"
	prev.Volumes = []reported.Volume{{VolumeId: "web-data", State: reported.VolumePending}}
	prev.Exports = []reported.Export{{ExportId: "e1", State: reported.ExportPreparing}}
	next := rep("",
		inst("web", reported.InstanceRunning, ""),
		inst("blog", reported.InstanceIdle, ""),
		inst("api", reported.InstanceFailed, "nothing answered on port 3000 inside the guest"),
		inst("new", reported.InstancePending, "waiting to be started: its host is 256 MiB short"),
	)
	next.AcceptedDigest = "bbbbbbbbbbbbbbbb"
	next.Volumes = []reported.Volume{{VolumeId: "web-data", State: reported.VolumeReady}}
	next.Exports = []reported.Export{{ExportId: "e1", State: reported.ExportFailed, Message: "the bucket refused it"}}
	want := `host h1 accepted aaaaaaaaaaaa→bbbbbbbbbbbb
instance blog slept running→idle
instance api failed starting→failed: nothing answered on port 3000 inside the guest
instance new pending →pending: waiting to be started: its host is 256 MiB short
instance old removed running→
volume web-data ready pending→ready
export e1 failed preparing→failed: the bucket refused it`
	if got := lines(Diff(prev, next)); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	for _, e := range Diff(prev, next) {
		if !e.At.Equal(t0) {
			t.Fatalf("%s is stamped %v, not the report's time", line(e), e.At)
		}
	}
	if evs := Diff(next, next); len(evs) != 0 {
		t.Fatalf("a report against itself: %s", lines(evs))
	}
}

func TestARefusalItsEndANewDeploymentAndARestartAreEvents(t *testing.T) {
	a := rep("", reported.Instance{AppId: "web", DeploymentId: "d1", State: reported.InstanceRunning})
	b := rep("desired.json was refused: instances[0].appId is empty",
		reported.Instance{AppId: "web", DeploymentId: "d1", State: reported.InstanceRunning, RestartCount: 1, Message: "restarted after exit 1"})
	c := rep("", reported.Instance{AppId: "web", DeploymentId: "d2", State: reported.InstanceStarting, RestartCount: 1})
	got := lines(append(Diff(a, b), Diff(b, c)...))
	want := `host h1 refused: desired.json was refused: instances[0].appId is empty
instance web restarted: restarted after exit 1
host h1 readable
instance web deploying d1→d2
instance web starting running→starting`
	if got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
}

func TestTheFirstReportAgainstNothingShowsEveryInstanceArriving(t *testing.T) {
	got := lines(Diff(nil, rep("", inst("web", reported.InstanceStarting, ""))))
	if got != "instance web starting →starting" {
		t.Fatalf("events: %s", got)
	}
}

func TestTheJournalKeepsTheNewestEventsNumberedAndWakesItsFollowers(t *testing.T) {
	j := NewJournal(3)
	j.Baseline(rep("", inst("web", reported.InstanceRunning, "")))
	_, more := j.After(0)
	states := []reported.InstanceState{reported.InstanceIdle, reported.InstanceRunning, reported.InstanceIdle, reported.InstanceRunning, reported.InstanceIdle}
	for _, st := range states {
		j.Observe(rep("", inst("web", st, "")))
	}
	select {
	case <-more:
	default:
		t.Fatal("a follower waiting for more was not woken")
	}
	evs, _ := j.After(0)
	if len(evs) != 3 || evs[0].Seq != 3 || evs[2].Seq != 5 || evs[2].Verb != VerbSlept {
		t.Fatalf("kept %s (seq %d…), want the newest three, 3 to 5", lines(evs), evs[0].Seq)
	}
	if evs, _ := j.After(4); len(evs) != 1 || evs[0].Seq != 5 {
		t.Fatalf("after 4: %+v", evs)
	}
}

func TestAStartThatEndsAWakeIsAWakeInTheJournal(t *testing.T) {
	j := NewJournal(0)
	j.Baseline(rep("", inst("blog", reported.InstanceIdle, "")))
	j.Observe(rep("", inst("blog", reported.InstanceStarting, "")))
	j.Observe(rep("", inst("blog", reported.InstanceRunning, "")))
	j.Observe(rep("", inst("blog", reported.InstanceStopped, "")))
	j.Observe(rep("", inst("blog", reported.InstanceStarting, "")))
	j.Observe(rep("", inst("blog", reported.InstanceRunning, "")))
	evs, _ := j.After(0)
	var verbs []string
	for _, e := range evs {
		verbs = append(verbs, string(e.Verb))
	}
	if got := strings.Join(verbs, " "); got != "waking woke stopped starting started" {
		t.Fatalf("verbs: %s", got)
	}
}

func TestAMessageThatCountsDownIsNotAnEventOfItsOwn(t *testing.T) {
	a := rep("", inst("web", reported.InstanceFailed, "exit 1; it is restarted in 2.4s"))
	b := rep("", inst("web", reported.InstanceFailed, "exit 1; it is restarted in 0.4s"))
	if evs := Diff(a, b); len(evs) != 0 {
		t.Fatalf("a countdown made events: %s", lines(evs))
	}
}
