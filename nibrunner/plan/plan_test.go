package plan

import (
	"math"
	"reflect"
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

var t0 = time.Unix(1_800_000_000, 0)

func instance(app, dep string, state desired.DesiredInstanceState) desired.DesiredInstance {
	return desired.DesiredInstance{
		AppId: desired.AppId(app), DeploymentId: desired.DeploymentId(dep), VolumeId: desired.VolumeId("vol-" + app),
		DesiredState: state,
		Config:       desired.AppConfig{RestartPolicy: desired.RestartPolicy{MaxRestarts: 3, InitialBackoffMs: 1000, MaxBackoffMs: 8000, BackoffFactor: 2, ResetAfterMs: 600000}},
	}
}

func volume(app string, size uint64, p desired.DesiredPresence) desired.DesiredVolume {
	return desired.DesiredVolume{VolumeId: desired.VolumeId("vol-" + app), AppId: desired.AppId(app), SizeBytes: size, DesiredState: p}
}

func doc(ins ...desired.DesiredInstance) *desired.HostDesiredState {
	d := &desired.HostDesiredState{HostId: "h"}
	for _, in := range ins {
		d.Instances = append(d.Instances, in)
		d.Volumes = append(d.Volumes, volume(string(in.AppId), 4096, desired.Present))
	}
	return d
}

func withVolumes(apps ...string) map[string]Volume {
	m := map[string]Volume{}
	for _, a := range apps {
		m["vol-"+a] = Volume{AppID: a, SizeBytes: 4096}
	}
	return m
}

func TestInstancePlans(t *testing.T) {
	onRequestIdle := instance("a", "d1", desired.StateOnRequest)
	idle := desired.IdleTimeoutMs(60000)
	onRequestIdle.IdleTimeoutMs = &idle
	maxLife := instance("a", "d1", desired.StateOnRequest)
	maxLife.Activation = &desired.ActivationPolicy{SleepWhen: desired.SleepPolicy{Kind: desired.SleepMaxLifetime, TtlMs: 60000}}
	reconfigured := instance("a", "d1", desired.StateRunning)
	reconfigured.Config.Resources.MemoryMib *= 2
	reconfigured.Config.Command.Args = append(reconfigured.Config.Command.Args, "--changed")

	tests := []struct {
		name string
		in   desired.DesiredInstance
		obs  *Instance // nil: never seen
		want InstanceKind
	}{
		{"a new running app is started", instance("a", "d1", desired.StateRunning), nil, Start},
		{"a new on-request app boots for its first deploy", instance("a", "d1", desired.StateOnRequest), nil, Start},
		{"a new stopped app is left down", instance("a", "d1", desired.StateStopped), nil, NoAction},
		{"an app up on its deployment is left alone", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true}, NoAction},
		{"a changed config under the same deploymentId leaves the guest alone", reconfigured, &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true}, NoAction},
		{"a new deploymentId replaces the guest", instance("a", "d2", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true}, Replace},
		{"a new deploymentId replaces a sleeper too", instance("a", "d2", desired.StateOnRequest), &Instance{DeploymentID: "d1", Sleeping: true, Booted: true}, Replace},
		{"a new deploymentId of an app out of restarts starts afresh", instance("a", "d2", desired.StateRunning), &Instance{DeploymentID: "d1", VM: NoVM, Budget: spent, Booted: true}, Start},
		{"a guest whose process exited is restarted once its backoff is over", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Exited, Booted: true, FailedAt: t0.Add(-time.Second)}, Restart},
		{"a guest out of restarts stays down", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Exited, Budget: spent, Booted: true}, NoAction},
		{"a down guest out of restarts stays down", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", Budget: spent, Booted: true}, NoAction},
		{"a guest failing its health check is restarted", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Up, Health: health.Failed, Booted: true, FailedAt: t0.Add(-time.Minute)}, Restart},
		{"an unhealthy guest is restarted", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Up, Health: health.Unhealthy, Booted: true, FailedAt: t0.Add(-time.Minute)}, Restart},
		{"a failing guest out of restarts is stopped", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Up, Health: health.Failed, Budget: spent, Booted: true}, Stop},
		{"an app asked stopped is stopped", instance("a", "d1", desired.StateStopped), &Instance{DeploymentID: "d1", VM: Up, Booted: true}, Stop},
		{"a sleeper asked stopped drops its snapshot", instance("a", "d1", desired.StateStopped), &Instance{DeploymentID: "d1", Sleeping: true, Booted: true}, Stop},
		{"a stopped app that is down is left alone", instance("a", "d1", desired.StateStopped), &Instance{DeploymentID: "d1", Booted: true}, NoAction},
		{"a stopped app asked running again is started", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", Booted: true}, Start},
		{"a sleeper asked running is woken", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", Sleeping: true, Booted: true}, Wake},
		{"an on-request sleeper waits for a request", instance("a", "d1", desired.StateOnRequest), &Instance{DeploymentID: "d1", Sleeping: true, Booted: true}, NoAction},
		{"an on-request app booted once waits for a request", instance("a", "d1", desired.StateOnRequest), &Instance{DeploymentID: "d1", Booted: true}, NoAction},
		{"an idle on-request app goes to sleep", onRequestIdle, &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, StartedAt: t0.Add(-2 * time.Minute), LastTrafficAt: t0.Add(-61 * time.Second)}, Sleep},
		{"a recently used on-request app stays up", onRequestIdle, &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, StartedAt: t0.Add(-2 * time.Minute), LastTrafficAt: t0.Add(-10 * time.Second)}, NoAction},
		{"an open request keeps an idle app up", onRequestIdle, &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, StartedAt: t0.Add(-2 * time.Minute), Busy: true}, NoAction},
		{"a freshly woken app is not idle yet", onRequestIdle, &Instance{DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, StartedAt: t0.Add(-10 * time.Second), LastTrafficAt: t0.Add(-time.Hour)}, NoAction},
		{"max-lifetime sleeps however busy after ttl plus 30s", maxLife, &Instance{DeploymentID: "d1", VM: Up, Booted: true, Busy: true, StartedAt: t0.Add(-91 * time.Second), LastTrafficAt: t0}, Sleep},
		{"max-lifetime gives an open request 30s more", maxLife, &Instance{DeploymentID: "d1", VM: Up, Booted: true, Busy: true, StartedAt: t0.Add(-70 * time.Second), LastTrafficAt: t0}, NoAction},
		{"a running app never sleeps", instance("a", "d1", desired.StateRunning), &Instance{DeploymentID: "d1", VM: Up, Booted: true, StartedAt: t0.Add(-48 * time.Hour)}, NoAction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := Observed{Now: t0, Instances: map[string]Instance{}, Volumes: withVolumes("a")}
			if tt.obs != nil {
				tt.obs.VolumeID = "vol-a"
				obs.Instances["a"] = *tt.obs
			}
			got := Plan(doc(tt.in), obs).Instances
			var want []InstanceAction
			if tt.want != NoAction {
				want = []InstanceAction{{Kind: tt.want, AppID: "a"}}
			}
			for i := range got {
				got[i].Restart = backoff.Decision{} // TestRestartBudgets checks it
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

// spent is a budget d1 spent.
var spent = backoff.Budget{DeploymentID: "d1", Window: 3, Total: 3, Exhausted: true}

func TestRestartBudgets(t *testing.T) {
	// The policy of instance(): at most 3 restarts, 1 s doubling to 8 s,
	// the count reset after 10 minutes without a start.
	exited := func(b backoff.Budget, failedAgo time.Duration) Instance {
		return Instance{DeploymentID: "d1", Recorded: "d1", VM: Exited, Booted: true, VolumeID: "vol-a", Budget: b, FailedAt: t0.Add(-failedAgo)}
	}
	bootFailed := func(b backoff.Budget, failedAgo time.Duration) Instance {
		return Instance{DeploymentID: "d1", Recorded: "d1", VM: NoVM, Booted: true, VolumeID: "vol-a", Budget: b, FailedAt: t0.Add(-failedAgo),
			StartFailure: "the microVM could not be started: boom", StartFailed: "d1"}
	}
	firstFailed := func(failedAgo time.Duration) Instance {
		return Instance{DeploymentID: "d1", Recorded: "d1", VM: NoVM, VolumeID: "vol-a", Budget: backoff.Budget{DeploymentID: "d1"}, FailedAt: t0.Add(-failedAgo),
			StartFailure: "its layers could not be made ready: boom", StartFailed: "d1"}
	}
	started := t0.Add(-time.Minute)
	wakeFailed := func(failedAgo time.Duration) Instance {
		return Instance{DeploymentID: "d1", Recorded: "d1", VM: NoVM, Booted: true, VolumeID: "vol-a", Budget: backoff.Budget{DeploymentID: "d1", LastStart: started}, FailedAt: t0.Add(-failedAgo)}
	}
	tests := []struct {
		name    string
		obs     Instance
		want    InstanceAction
		retryAt time.Time
	}{
		{"the first restart waits the initial backoff", exited(backoff.Budget{DeploymentID: "d1", LastStart: started}, 500*time.Millisecond),
			InstanceAction{}, t0.Add(500 * time.Millisecond)},
		{"the first restart happens once the initial backoff is over", exited(backoff.Budget{DeploymentID: "d1", LastStart: started}, time.Second),
			InstanceAction{Kind: Restart, AppID: "a", Restart: backoff.Decision{At: t0, N: 1}}, time.Time{}},
		{"the backoff doubles with each restart", exited(backoff.Budget{DeploymentID: "d1", Window: 2, Total: 2, LastStart: started}, 3*time.Second),
			InstanceAction{}, t0.Add(time.Second)},
		{"a failure not timed yet counts from now", Instance{DeploymentID: "d1", Recorded: "d1", VM: Exited, Booted: true, VolumeID: "vol-a", Budget: backoff.Budget{DeploymentID: "d1", LastStart: started}},
			InstanceAction{}, t0.Add(time.Second)},
		{"the restart after the last is giving up", exited(backoff.Budget{DeploymentID: "d1", Window: 3, Total: 3, LastStart: started}, time.Hour),
			InstanceAction{Kind: GiveUp, AppID: "a"}, time.Time{}},
		{"a guest up that fails after its last restart is given up too", Instance{DeploymentID: "d1", Recorded: "d1", VM: Up, Health: health.Unhealthy, Booted: true, VolumeID: "vol-a", Budget: backoff.Budget{DeploymentID: "d1", Window: 3, Total: 3, LastStart: started}, FailedAt: t0},
			InstanceAction{Kind: GiveUp, AppID: "a"}, time.Time{}},
		{"a guest that ran past resetAfter before failing starts a fresh count", exited(backoff.Budget{DeploymentID: "d1", Window: 3, Total: 3, LastStart: t0.Add(-time.Hour)}, time.Second),
			InstanceAction{Kind: Restart, AppID: "a", Restart: backoff.Decision{At: t0, N: 1}}, time.Time{}},
		{"giving up is terminal however long ago", exited(spent, 48*time.Hour),
			InstanceAction{}, time.Time{}},
		// A restart whose boot failed leaves no guest (the exited one was
		// taken down first) and a failure timed at that attempt.
		{"a restart that failed to boot waits out the next backoff", bootFailed(backoff.Budget{DeploymentID: "d1", Window: 1, Total: 1, LastStart: t0.Add(-time.Second)}, time.Second),
			InstanceAction{}, t0.Add(time.Second)},
		{"a restart that failed to boot is restarted once the next backoff is over", bootFailed(backoff.Budget{DeploymentID: "d1", Window: 1, Total: 1, LastStart: t0.Add(-2 * time.Second)}, 2*time.Second),
			InstanceAction{Kind: Restart, AppID: "a", Restart: backoff.Decision{At: t0, N: 2}}, time.Time{}},
		{"a restart that failed to boot after the last is giving up", bootFailed(backoff.Budget{DeploymentID: "d1", Window: 3, Total: 3, LastStart: t0.Add(-time.Hour)}, time.Hour),
			InstanceAction{Kind: GiveUp, AppID: "a"}, time.Time{}},
		{"an app out of restarts after failing to boot is not started again", bootFailed(spent, time.Hour),
			InstanceAction{}, time.Time{}},
		// A first start that failed: never booted, no restart spent yet.
		{"a first start that failed waits the initial backoff", firstFailed(500 * time.Millisecond),
			InstanceAction{}, t0.Add(500 * time.Millisecond)},
		{"a first start that failed is tried again as the first restart", firstFailed(time.Second),
			InstanceAction{Kind: Restart, AppID: "a", Restart: backoff.Decision{At: t0, N: 1}}, time.Time{}},
		// A wake that failed: the daemon dropped the snapshot and timed the
		// failure at the wake, which spent no restart.
		{"a wake that failed waits the initial backoff", wakeFailed(500 * time.Millisecond),
			InstanceAction{}, t0.Add(500 * time.Millisecond)},
		{"a wake that failed is tried again as the first restart, cold", wakeFailed(time.Second),
			InstanceAction{Kind: Restart, AppID: "a", Restart: backoff.Decision{At: t0, N: 1}}, time.Time{}},
		{"a failure of an older deployment does not hold back a start", Instance{VM: NoVM, Recorded: "d0", DeploymentID: "d0", VolumeID: "vol-a", Budget: backoff.Budget{DeploymentID: "d0"}, FailedAt: t0},
			InstanceAction{Kind: Start, AppID: "a"}, time.Time{}},
		{"the budget of an older deployment does not count", Instance{VM: NoVM, Recorded: "d0", DeploymentID: "d0", Booted: true, VolumeID: "vol-a", Budget: backoff.Budget{DeploymentID: "d0", Exhausted: true}},
			InstanceAction{Kind: Start, AppID: "a"}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := Observed{Now: t0, Instances: map[string]Instance{"a": tt.obs}, Volumes: withVolumes("a")}
			got := Plan(doc(instance("a", "d1", desired.StateRunning)), obs)
			var want []InstanceAction
			if tt.want.Kind != NoAction {
				want = []InstanceAction{tt.want}
			}
			if !reflect.DeepEqual(got.Instances, want) || !got.RetryAt.Equal(tt.retryAt) {
				t.Fatalf("got %+v retry at %v, want %+v retry at %v", got.Instances, got.RetryAt, want, tt.retryAt)
			}
		})
	}
}

func TestAFailedSleepIsRetriedAfterTheSleepBackoff(t *testing.T) {
	in := instance("a", "d1", desired.StateOnRequest)
	idle := desired.IdleTimeoutMs(60000)
	in.IdleTimeoutMs = &idle
	idleUp := func(failed int, failedAgo time.Duration, operator bool) Instance {
		return Instance{DeploymentID: "d1", Recorded: "d1", VM: Up, Health: health.Running, Booted: true, VolumeID: "vol-a", StartedAt: t0.Add(-time.Hour),
			FailedSleeps: failed, SleepFailedAt: t0.Add(-failedAgo), WantAsleep: operator}
	}
	tests := []struct {
		name    string
		obs     Instance
		want    InstanceKind
		retryAt time.Time
	}{
		{"an idle app that never failed to sleep sleeps", idleUp(0, 0, false), Sleep, time.Time{}},
		{"the first retry waits a second", idleUp(1, 500*time.Millisecond, false), NoAction, t0.Add(500 * time.Millisecond)},
		{"the first retry comes after a second", idleUp(1, time.Second, false), Sleep, time.Time{}},
		{"the third retry waits four seconds", idleUp(3, 3*time.Second, false), NoAction, t0.Add(time.Second)},
		{"retries are at most five minutes apart", idleUp(30, 5*time.Minute, false), Sleep, time.Time{}},
		{"an operator's sleep does not wait", idleUp(3, 0, true), Sleep, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := Observed{Now: t0, Instances: map[string]Instance{"a": tt.obs}, Volumes: withVolumes("a")}
			got := Plan(doc(in), obs)
			var want []InstanceAction
			if tt.want != NoAction {
				want = []InstanceAction{{Kind: tt.want, AppID: "a"}}
			}
			if !reflect.DeepEqual(got.Instances, want) || !got.RetryAt.Equal(tt.retryAt) {
				t.Fatalf("got %+v retry at %v, want %+v retry at %v", got.Instances, got.RetryAt, want, tt.retryAt)
			}
		})
	}
}

func TestAGuestWhoseVolumeWasLostIsRecovered(t *testing.T) {
	obs := Observed{Now: t0, Instances: map[string]Instance{"a": {DeploymentID: "d1", VM: Up, Booted: true, VolumeID: "vol-a"}}, Volumes: map[string]Volume{}}
	got := Plan(doc(instance("a", "d1", desired.StateRunning)), obs)
	if !reflect.DeepEqual(got.Instances, []InstanceAction{{Kind: Recover, AppID: "a"}}) {
		t.Fatalf("instances: %v", got.Instances)
	}
	if !reflect.DeepEqual(got.Volumes, []VolumeAction{{Kind: Provision, VolumeID: "vol-a", SizeBytes: 4096}}) {
		t.Fatalf("volumes: %v", got.Volumes)
	}
}

func TestAnAppTheDocumentNoLongerListsIsForgotten(t *testing.T) {
	obs := Observed{Now: t0, Instances: map[string]Instance{"gone": {DeploymentID: "d", VM: Up}, "a": {DeploymentID: "d1", VM: Up, Booted: true, VolumeID: "vol-a"}}, Volumes: withVolumes("a", "gone")}
	got := Plan(doc(instance("a", "d1", desired.StateRunning)), obs)
	if !reflect.DeepEqual(got.Instances, []InstanceAction{{Kind: Forget, AppID: "gone"}}) {
		t.Fatalf("instances: %v", got.Instances)
	}
	if len(got.Volumes) != 0 {
		t.Fatalf("the unlisted app's volume was touched: %v", got.Volumes)
	}
}

func TestAnInstanceTheHostCannotCarryIsNeverStartedAndIsTakenDown(t *testing.T) {
	in := instance("a", "d1", desired.StateRunning)
	obs := Observed{Now: t0, Instances: map[string]Instance{}, Volumes: withVolumes("a"), Problems: map[string]string{"a": "no raw proxy"}}
	if got := Plan(doc(in), obs).Instances; len(got) != 0 {
		t.Fatalf("got %v", got)
	}
	obs.Instances["a"] = Instance{DeploymentID: "d1", VM: Up}
	if got := Plan(doc(in), obs).Instances; !reflect.DeepEqual(got, []InstanceAction{{Kind: Stop, AppID: "a"}}) {
		t.Fatalf("got %v", got)
	}
}

func TestVolumePlans(t *testing.T) {
	tests := []struct {
		name string
		vol  desired.DesiredVolume
		user bool // an instance in the document uses it
		have *Volume
		want []VolumeAction
	}{
		{"a new volume is provisioned at its rounded size", volume("a", 1000, desired.Present), false, nil, []VolumeAction{{Kind: Provision, VolumeID: "vol-a", SizeBytes: 1024}}},
		{"a volume asked bigger grows", volume("a", 8192, desired.Present), false, &Volume{SizeBytes: 4096}, []VolumeAction{{Kind: Grow, VolumeID: "vol-a", SizeBytes: 8192}}},
		{"a volume asked smaller is refused", volume("a", 1024, desired.Present), false, &Volume{SizeBytes: 4096}, []VolumeAction{{Kind: RefuseShrink, VolumeID: "vol-a", SizeBytes: 1024}}},
		{"a volume at its size is left alone", volume("a", 4000, desired.Present), false, &Volume{SizeBytes: 4096}, nil},
		{"an absent volume nobody uses is torn down", volume("a", 4096, desired.Absent), false, &Volume{SizeBytes: 4096}, []VolumeAction{{Kind: Teardown, VolumeID: "vol-a"}}},
		{"an absent volume an instance uses is held back", volume("a", 4096, desired.Absent), true, &Volume{SizeBytes: 4096}, []VolumeAction{{Kind: Blocked, VolumeID: "vol-a", By: "a"}}},
		{"an absent volume already gone needs nothing", volume("a", 4096, desired.Absent), false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &desired.HostDesiredState{Volumes: []desired.DesiredVolume{tt.vol}}
			if tt.user {
				d.Instances = []desired.DesiredInstance{instance("a", "d1", desired.StateStopped)}
			}
			obs := Observed{Now: t0, Volumes: map[string]Volume{}}
			if tt.have != nil {
				obs.Volumes["vol-a"] = *tt.have
			}
			if got := Plan(d, obs).Volumes; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAnAbsentVolumeIsHeldBackWhileAnUnlistedGuestStillRunsOnIt(t *testing.T) {
	d := &desired.HostDesiredState{Volumes: []desired.DesiredVolume{volume("a", 4096, desired.Absent)}}
	obs := Observed{Now: t0, Volumes: withVolumes("a"), Instances: map[string]Instance{"a": {VM: Up, VolumeID: "vol-a"}}}
	got := Plan(d, obs)
	if !reflect.DeepEqual(got.Volumes, []VolumeAction{{Kind: Blocked, VolumeID: "vol-a", By: "a"}}) {
		t.Fatalf("volumes %v", got.Volumes)
	}
}

func TestATruncatedDocumentDeletesNothing(t *testing.T) {
	// The host has volumes, checkpoints and a running app; the document
	// arrives cut short: no volumes, no checkpoints.
	obs := Observed{Now: t0,
		Instances:   map[string]Instance{"a": {DeploymentID: "d1", VM: Up, Booted: true, VolumeID: "vol-a"}},
		Volumes:     withVolumes("a", "b"),
		Checkpoints: map[string]bool{"c1": true},
	}
	got := Plan(&desired.HostDesiredState{HostId: "h"}, obs)
	if len(got.Volumes) != 0 || len(got.Checkpoints) != 0 {
		t.Fatalf("a truncated document touched tenant data: %+v", got)
	}
	// Instances are authoritative, so the app is forgotten; its volume stays.
	if !reflect.DeepEqual(got.Instances, []InstanceAction{{Kind: Forget, AppID: "a"}}) {
		t.Fatalf("instances %v", got.Instances)
	}
}

func TestCheckpointAndExportPlans(t *testing.T) {
	d := &desired.HostDesiredState{
		Checkpoints: []desired.DesiredCheckpoint{
			{CheckpointId: "new", VolumeId: "vol-a", DesiredState: desired.Present},
			{CheckpointId: "done", VolumeId: "vol-a", DesiredState: desired.Present},
			{CheckpointId: "drop", VolumeId: "vol-a", DesiredState: desired.Absent},
			{CheckpointId: "novol", VolumeId: "vol-x", DesiredState: desired.Present},
		},
		Exports: []desired.DesiredExport{
			{ExportId: "e-new", AppId: "a", VolumeId: "vol-a", DesiredState: desired.Present},
			{ExportId: "e-done", AppId: "a", VolumeId: "vol-a", DesiredState: desired.Present},
			{ExportId: "e-absent", AppId: "a", VolumeId: "vol-a", DesiredState: desired.Absent},
		},
	}
	obs := Observed{Now: t0, Volumes: withVolumes("a"),
		Checkpoints: map[string]bool{"done": true, "drop": true, "unlisted": true},
		Exports:     map[string]bool{"e-done": true, "e-absent": true, "e-dropped": true},
	}
	got := Plan(d, obs)
	wantC := []CheckpointAction{{CheckpointID: "drop", VolumeID: "vol-a"}, {Create: true, CheckpointID: "new", VolumeID: "vol-a"}}
	if !reflect.DeepEqual(got.Checkpoints, wantC) {
		t.Fatalf("checkpoints %v", got.Checkpoints)
	}
	wantE := []ExportAction{{ExportID: "e-absent"}, {ExportID: "e-dropped"}, {Write: true, ExportID: "e-new"}}
	if !reflect.DeepEqual(got.Exports, wantE) {
		t.Fatalf("exports %v", got.Exports)
	}
}

func TestAConvergedHostPlansNothing(t *testing.T) {
	d := doc(instance("a", "d1", desired.StateRunning), instance("b", "d1", desired.StateStopped))
	obs := Observed{Now: t0, Volumes: withVolumes("a", "b"), Instances: map[string]Instance{
		"a": {DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, VolumeID: "vol-a"},
		"b": {DeploymentID: "d1", Booted: true, VolumeID: "vol-b"},
	}}
	if got := Plan(d, obs); !got.Empty() {
		t.Fatalf("got %+v", got)
	}
}

func TestARestartPolicyOfHugeMillisecondCountsWaitsTheLongestTimeNotANegativeOne(t *testing.T) {
	in := &desired.DesiredInstance{}
	in.Config.RestartPolicy = desired.RestartPolicy{MaxRestarts: 100, InitialBackoffMs: 1000, MaxBackoffMs: 1e13, BackoffFactor: 2, ResetAfterMs: math.MaxUint64}
	p := RestartPolicy(in)
	if p.Max <= 0 || p.ResetAfter <= 0 {
		t.Fatalf("maxBackoffMs 10^13 and resetAfterMs 2^64-1 read as %v and %v", p.Max, p.ResetAfter)
	}
	if d := p.Delay(60); d <= 0 {
		t.Fatalf("restart 60 waits %v", d)
	}
}
