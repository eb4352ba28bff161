package plan

import (
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

func TestOnlyAnAppTheDocumentAsksUpAndTheHostCanCarryIsWakeable(t *testing.T) {
	running, onRequest, stopped := instance("a", "d1", desired.StateRunning), instance("a", "d1", desired.StateOnRequest), instance("a", "d1", desired.StateStopped)
	tests := []struct {
		name     string
		in       *desired.DesiredInstance
		problems map[string]string
		want     bool
	}{
		{"an on-request app is wakeable", &onRequest, nil, true},
		{"an app asked running is wakeable", &running, nil, true},
		{"an app the document does not list is not", nil, nil, false},
		{"an app asked stopped is not", &stopped, nil, false},
		{"an app the host cannot carry is not", &onRequest, map[string]string{"a": "no raw proxy"}, false},
		{"another app's problem is not this one's", &onRequest, map[string]string{"b": "no raw proxy"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Wakeable(tt.in, tt.problems); got != tt.want {
				t.Fatalf("Wakeable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTheWakesAnswers(t *testing.T) {
	onRequest := instance("a", "d1", desired.StateOnRequest) // at most 3 restarts, from 1 s doubling
	tests := []struct {
		name    string
		obs     *Instance // nil: the daemon has no record of it
		volume  bool      // the volume is on the host
		wanted  desired.DesiredPresence
		kind    InstanceKind
		refusal WakeRefusal
	}{
		{"an app never started is started", nil, true, desired.Present, Start, WakeRefusal{}},
		{"a sleeping app is woken", &Instance{Recorded: "d1", DeploymentID: "d1", Booted: true, Sleeping: true, WantAwake: true}, true, desired.Present, Wake, WakeRefusal{}},
		{"an app booted once and down is woken cold", &Instance{Recorded: "d1", DeploymentID: "d1", Booted: true, WantAwake: true}, true, desired.Present, Wake, WakeRefusal{}},
		{"a snapshot of an older deployment is replaced", &Instance{Recorded: "d0", DeploymentID: "d0", Booted: true, Sleeping: true, WantAwake: true}, true, desired.Present, Replace, WakeRefusal{}},
		{"an exited guest whose backoff is over is restarted", &Instance{Recorded: "d1", DeploymentID: "d1", VM: Exited, FailedAt: t0.Add(-time.Minute), Budget: backoff.Budget{DeploymentID: "d1"}, WantAwake: true}, true, desired.Present, Restart, WakeRefusal{}},
		{"an exited guest in its backoff waits for its restart", &Instance{Recorded: "d1", DeploymentID: "d1", VM: Exited, FailedAt: t0, Budget: backoff.Budget{DeploymentID: "d1", Window: 1, Total: 1, LastStart: t0}, WantAwake: true}, true, desired.Present, NoAction, WakeRefusal{Why: WakeAwaitsRestart}},
		{"an app whose last start failed waits for its restart", &Instance{Recorded: "d1", DeploymentID: "d1", VM: NoVM, Booted: true, FailedAt: t0, Budget: backoff.Budget{DeploymentID: "d1", Window: 1, Total: 1, LastStart: t0}, WantAwake: true}, true, desired.Present, NoAction, WakeRefusal{Why: WakeAwaitsRestart}},
		{"a deployment out of restarts is out of restarts", &Instance{Recorded: "d1", DeploymentID: "d1", Booted: true, Budget: spent, WantAwake: true}, true, desired.Present, NoAction, WakeRefusal{Why: WakeOutOfRestarts}},
		{"a failed guest that has just spent its budget gives up", &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Failed, FailedAt: t0.Add(-time.Minute), Budget: backoff.Budget{DeploymentID: "d1", Window: 3, Total: 3, LastStart: t0.Add(-time.Minute)}, WantAwake: true}, true, desired.Present, GiveUp, WakeRefusal{Why: WakeOutOfRestarts}},
		{"an app whose volume is not wanted has nothing to wake", nil, false, desired.Absent, NoAction, WakeRefusal{Why: WakeVolumeNotReady}},
		{"an app with nothing to start on says why its start was held back", &Instance{Note: "waiting to be started: every slot of this host is taken (max_apps = 1)", WantAwake: true}, false, desired.Absent, NoAction, WakeRefusal{Why: WakeHeldBack, Note: "waiting to be started: every slot of this host is taken (max_apps = 1)"}},
		{"a guest whose volume vanished is recovered", &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, WantAwake: true}, false, desired.Present, Recover, WakeRefusal{}},
		{"a guest up and asked asleep is not woken: the planner sleeps it first", &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, WantAsleep: true}, true, desired.Present, Sleep, WakeRefusal{Why: WakePlannerFirst, Kind: Sleep}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc(onRequest)
			d.Volumes[0].DesiredState = tt.wanted
			obs := Observed{Now: t0, Instances: map[string]Instance{}, Volumes: map[string]Volume{}, Problems: map[string]string{}}
			if tt.volume {
				obs.Volumes = withVolumes("a")
			}
			if tt.obs != nil {
				obs.Instances["a"] = *tt.obs
			}
			x, why := WakeAction(d, &onRequest, obs)
			if x.Kind != tt.kind || why != tt.refusal {
				t.Fatalf("WakeAction = %q, %+v; want %q, %+v", x.Kind, why, tt.kind, tt.refusal)
			}
		})
	}
}

func TestAWakeEndsOnTheFirstRuleThatHolds(t *testing.T) {
	base := WakeFacts{Wakeable: true, WantAwake: true, HasSlot: true}
	tests := []struct {
		name   string
		change func(*WakeFacts)
		want   WakeEnd
	}{
		{"nothing known yet: ask the planner", func(*WakeFacts) {}, WakeEnd{Step: WakeDecide}},
		{"the daemon closing", func(f *WakeFacts) { f.Closing, f.Wakeable = true, false }, WakeEnd{Step: WakeClosed}},
		{"not wakeable", func(f *WakeFacts) { f.Wakeable = false; f.Probing, f.Health = true, health.Running }, WakeEnd{Step: WakeNotRunning, Release: true}},
		{"the pass held the first start back, saying why", func(f *WakeFacts) { f.PassHeldBack, f.HeldBack = true, "every slot is taken" },
			WakeEnd{Step: WakeRefused, Why: "every slot is taken", Release: true}},
		{"the pass held it back and said nothing", func(f *WakeFacts) { f.PassHeldBack = true }, WakeEnd{Step: WakeRefused, Why: MsgNoSlotYet, Release: true}},
		{"its health check passed", func(f *WakeFacts) { f.Probing, f.Health, f.Up = true, health.Running, true }, WakeEnd{Step: WakeUp, Release: true}},
		{"its health check failed", func(f *WakeFacts) { f.Probing, f.Health, f.ProbeFailure = true, health.Failed, "3 probes failed" },
			WakeEnd{Step: WakeRefused, Why: "3 probes failed", Release: true}},
		{"it became unhealthy", func(f *WakeFacts) { f.Probing, f.Health, f.ProbeFailure = true, health.Unhealthy, "3 probes failed" },
			WakeEnd{Step: WakeRefused, Why: "3 probes failed", Release: true}},
		{"booting: wait for its health check", func(f *WakeFacts) { f.Probing, f.Health = true, health.Starting }, WakeEnd{Step: WakeWait, Release: true}},
		{"its worker is at it", func(f *WakeFacts) { f.Busy = true }, WakeEnd{Step: WakeWait}},
		{"up with no prober: probe it", func(f *WakeFacts) { f.Up = true }, WakeEnd{Step: WakeProbe}},
		{"its start failed", func(f *WakeFacts) { f.WantAwake, f.Failure = false, "the microVM could not be started: boom" },
			WakeEnd{Step: WakeRefused, Why: "the microVM could not be started: boom", Release: true}},
		{"a shared wake gave up on a held-back first start", func(f *WakeFacts) { f.WantAwake, f.HasSlot, f.HeldBack = false, false, "every slot is taken" },
			WakeEnd{Step: WakeRefused, Why: "every slot is taken", Release: true}},
		{"a held-back note does not speak for an app with a slot", func(f *WakeFacts) { f.WantAwake, f.HeldBack = false, "every slot is taken" },
			WakeEnd{Step: WakeRefused, Why: MsgWentDownWaking, Release: true}},
		{"it went down with no word", func(f *WakeFacts) { f.WantAwake = false }, WakeEnd{Step: WakeRefused, Why: MsgWentDownWaking, Release: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base
			tt.change(&f)
			if got := WakeNext(f); got != tt.want {
				t.Fatalf("WakeNext = %+v, want %+v", got, tt.want)
			}
		})
	}
}
