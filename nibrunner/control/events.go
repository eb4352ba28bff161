package control

import (
	"time"

	"alpnib.dev/nibrunner/reported"
)

// Subject is what an event is about.
type Subject string

// The subjects.
const (
	SubjectHost       Subject = "host"
	SubjectInstance   Subject = "instance"
	SubjectVolume     Subject = "volume"
	SubjectCheckpoint Subject = "checkpoint"
	SubjectExport     Subject = "export"
)

// Verb says what happened, in the words an operator uses.
type Verb string

// The verbs. An instance's state change is named for where it went and,
// where that tells more, where it came from (idle → running "woke").
const (
	VerbAccepted  Verb = "accepted"  // the host took a new document
	VerbRefused   Verb = "refused"   // the host refuses the latest document (or has none)
	VerbReadable  Verb = "readable"  // the refusal is over
	VerbPending   Verb = "pending"   // waiting to be started, saying why
	VerbStarting  Verb = "starting"  // booting
	VerbWaking    Verb = "waking"    // restoring from its sleep snapshot
	VerbStarted   Verb = "started"   // up and healthy after a start
	VerbWoke      Verb = "woke"      // up and healthy after a sleep
	VerbRecovered Verb = "recovered" // healthy again after being unhealthy
	VerbUnhealthy Verb = "unhealthy" // its health check fails after it was healthy
	VerbSlept     Verb = "slept"     // put to sleep (memory snapshot)
	VerbStopping  Verb = "stopping"
	VerbStopped   Verb = "stopped"
	VerbFailed    Verb = "failed"
	VerbRestarted Verb = "restarted" // its VM was started again (restartCount grew)
	VerbDeploying Verb = "deploying" // desired.json names a new deployment
	VerbRemoved   Verb = "removed"   // no longer in the report
	// Volumes, checkpoints and exports take their new state as the verb
	// (ready, failed, deleted, preparing …).
)

// Event is one thing a pass did, as two consecutive reports show it.
type Event struct {
	// Seq numbers the events of one daemon run, from 1.
	Seq uint64 `json:"seq"`
	// At is the reportedAt of the report that showed it.
	At      time.Time `json:"at"`
	Subject Subject   `json:"subject"`
	// ID is the host, app, volume, checkpoint or export id.
	ID   string `json:"id"`
	Verb Verb   `json:"verb"`
	// From and To are the states (or deployments, for deploying) on
	// either side of the change, when it is one.
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Message string `json:"message,omitempty"`
	// An exec or cp (Subject exec) says who asked (the socket peer's
	// uid), what it ran, its exit status and how long it took.
	PeerUID    *int     `json:"peerUid,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	ExitCode   *int     `json:"exitCode,omitempty"`
	DurationMs int64    `json:"durationMs,omitempty"`
}

// Diff is what changed from prev to next, in report order: the host, then
// each instance, volume, checkpoint and export. A message that changes
// without its state is not an event: the daemon's messages count down
// ("it is restarted in 1.2s", "the next try in 4s"), and each pass would
// be one; the message rides on the state change it explains. prev may be nil (nothing
// was reported before). Events carry no Seq; the journal numbers them.
func Diff(prev, next *reported.HostReportedState) []Event {
	if next == nil {
		return nil
	}
	if prev == nil {
		prev = &reported.HostReportedState{}
	}
	at := next.ReportedAt
	var out []Event
	ev := func(s Subject, id string, v Verb, from, to, msg string) {
		out = append(out, Event{At: at, Subject: s, ID: id, Verb: v, From: from, To: to, Message: msg})
	}
	host := string(next.HostId)
	if next.AcceptedDigest != "" && next.AcceptedDigest != prev.AcceptedDigest {
		ev(SubjectHost, host, VerbAccepted, short(string(prev.AcceptedDigest)), short(string(next.AcceptedDigest)), "")
	}
	switch {
	case next.Message != "" && next.Message != prev.Message:
		ev(SubjectHost, host, VerbRefused, "", "", next.Message)
	case next.Message == "" && prev.Message != "":
		ev(SubjectHost, host, VerbReadable, "", "", "")
	}

	before := map[string]reported.Instance{}
	for _, in := range prev.Instances {
		before[string(in.AppId)] = in
	}
	seen := map[string]bool{}
	for _, in := range next.Instances {
		app := string(in.AppId)
		seen[app] = true
		old, had := before[app]
		if had && old.DeploymentId != in.DeploymentId {
			ev(SubjectInstance, app, VerbDeploying, string(old.DeploymentId), string(in.DeploymentId), "")
		}
		if had && in.RestartCount > old.RestartCount && old.DeploymentId == in.DeploymentId {
			ev(SubjectInstance, app, VerbRestarted, "", "", in.Message)
		}
		if !had || old.State != in.State {
			ev(SubjectInstance, app, instanceVerb(old.State, in.State), string(old.State), string(in.State), in.Message)
		}
	}
	for _, in := range prev.Instances {
		if !seen[string(in.AppId)] {
			ev(SubjectInstance, string(in.AppId), VerbRemoved, string(in.State), "", "")
		}
	}

	diffStates(prev.Volumes, next.Volumes, SubjectVolume,
		func(v reported.Volume) (string, string, string) {
			return string(v.VolumeId), string(v.State), v.Message
		}, ev)
	diffStates(prev.Checkpoints, next.Checkpoints, SubjectCheckpoint,
		func(c reported.Checkpoint) (string, string, string) {
			return string(c.CheckpointId), string(c.State), c.Message
		}, ev)
	diffStates(prev.Exports, next.Exports, SubjectExport,
		func(e reported.Export) (string, string, string) {
			return string(e.ExportId), string(e.State), e.Message
		}, ev)
	return out
}

// diffStates reports each item whose state changed (named for its new
// state) or that is gone.
func diffStates[T any](prev, next []T, s Subject, key func(T) (id, state, msg string), ev func(Subject, string, Verb, string, string, string)) {
	type was struct{ state, msg string }
	before := map[string]was{}
	for _, x := range prev {
		id, st, msg := key(x)
		before[id] = was{st, msg}
	}
	seen := map[string]bool{}
	for _, x := range next {
		id, st, msg := key(x)
		seen[id] = true
		old, had := before[id]
		if !had || old.state != st {
			ev(s, id, Verb(st), old.state, st, msg)
		}
	}
	for _, x := range prev {
		if id, st, _ := key(x); !seen[id] {
			ev(s, id, VerbRemoved, st, "", "")
		}
	}
}

// instanceVerb names an instance's move from one state to another.
func instanceVerb(from, to reported.InstanceState) Verb {
	switch to {
	case reported.InstancePending:
		return VerbPending
	case reported.InstanceStarting:
		if from == reported.InstanceIdle {
			return VerbWaking
		}
		return VerbStarting
	case reported.InstanceRunning:
		switch from {
		case reported.InstanceIdle:
			return VerbWoke
		case reported.InstanceUnhealthy:
			return VerbRecovered
		}
		return VerbStarted
	case reported.InstanceUnhealthy:
		return VerbUnhealthy
	case reported.InstanceIdle:
		return VerbSlept
	case reported.InstanceStopping:
		return VerbStopping
	case reported.InstanceStopped:
		return VerbStopped
	case reported.InstanceFailed:
		return VerbFailed
	}
	return Verb(to)
}

// short is a digest's first 12 characters, as the daemon's log shows it.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
