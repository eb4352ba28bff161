package plan

import (
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

func TestInstanceStatuses(t *testing.T) {
	running := instance("a", "d1", desired.StateRunning) // at most 3 restarts, from 1 s doubling
	onRequest := instance("a", "d1", desired.StateOnRequest)
	stopped := instance("a", "d1", desired.StateStopped)
	tests := []struct {
		name    string
		in      desired.DesiredInstance
		obs     *Instance // nil: the daemon knows nothing of it
		problem string
		want    Status
	}{
		{"an instance the host cannot carry is failed with the reason", running, nil, "no raw proxy",
			Status{State: health.Failed, Message: "this host cannot run it: no raw proxy"}},
		{"a start of this deployment that failed fails it", running, &Instance{StartFailure: "its layers could not be made ready: 404", StartFailed: "d1"}, "",
			Status{State: health.Failed, Message: "its layers could not be made ready: 404"}},
		{"a start of an older deployment that failed says nothing of this one", running, &Instance{StartFailure: "boom", StartFailed: "d0"}, "",
			Status{State: health.Pending, Message: "waiting to be started: the next converge pass boots it"}},
		{"a failed start of an app asked stopped is not reported", stopped, &Instance{StartFailure: "boom", StartFailed: "d1"}, "",
			Status{State: health.Stopped, Message: ""}},
		{"a deployment out of restarts says how many and what to do", running, &Instance{Recorded: "d1", Budget: spent, FailReason: "the app exited with code 1"}, "",
			Status{State: health.Failed, Message: "the app exited with code 1", Restart: RestartNote{Says: RestartOutOf, N: 3, MaxRestarts: 3}}},
		{"a new deployment is not out of its predecessor's restarts", running, &Instance{Recorded: "d0", Budget: backoff.Budget{DeploymentID: "d0", Exhausted: true}}, "",
			Status{State: health.Pending, Message: "waiting to be started: the next converge pass boots it"}},
		{"a guest up reports its health", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Running}, "",
			Status{State: health.Running, Message: ""}},
		{"a guest up on the old deployment while the new one is starting is starting", running, &Instance{Recorded: "d1", DeploymentID: "d0", VM: Up, Health: health.Running, Acting: true}, "",
			Status{State: health.Starting, Message: ""}},
		{"an unhealthy guest says why and when it is restarted", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Unhealthy, FailReason: "GET /healthz: 500", FailedAt: t0.Add(-234 * time.Millisecond), Budget: backoff.Budget{DeploymentID: "d1"}}, "",
			Status{State: health.Unhealthy, Message: "GET /healthz: 500", Restart: RestartNote{Says: RestartIn, In: 766 * time.Millisecond}}},
		{"a failed guest whose restart is due says only why", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Failed, FailReason: "GET /healthz: 500", FailedAt: t0.Add(-time.Minute), Budget: backoff.Budget{DeploymentID: "d1"}}, "",
			Status{State: health.Failed, Message: "GET /healthz: 500"}},
		{"an exited guest says which restart comes when", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Exited, FailedAt: t0, FailReason: "the app exited with code 3", Budget: backoff.Budget{DeploymentID: "d1", Window: 1, Total: 1, LastStart: t0.Add(-time.Minute)}}, "",
			Status{State: health.Failed, Message: "the app exited with code 3", Restart: RestartNote{Says: RestartNext, N: 2, MaxRestarts: 3, In: 2 * time.Second}}},
		{"a start under way is starting", running, &Instance{Recorded: "d1", Acting: true}, "",
			Status{State: health.Starting, Message: ""}},
		{"a start held back says why", running, &Instance{Note: "waiting to be started: every slot of this host is taken (max_apps = 1)"}, "",
			Status{State: health.Pending, Message: "waiting to be started: every slot of this host is taken (max_apps = 1)"}},
		{"an on-request app before its first boot is pending", onRequest, nil, "",
			Status{State: health.Pending, Message: "waiting to be started: the next converge pass boots it"}},
		{"an on-request app booted once and down is idle", onRequest, &Instance{Recorded: "d1", Booted: true, Sleeping: true}, "",
			Status{State: health.Idle, Message: ""}},
		{"an on-request app whose wake failed says why and which restart comes when", onRequest, &Instance{Recorded: "d1", DeploymentID: "d1", Booted: true, FailedAt: t0, FailReason: "the microVM could not be woken: refused; its memory snapshot was dropped and it is booted again from its volume", Budget: backoff.Budget{DeploymentID: "d1", LastStart: t0.Add(-time.Minute)}}, "",
			Status{State: health.Failed, Message: "the microVM could not be woken: refused; its memory snapshot was dropped and it is booted again from its volume", Restart: RestartNote{Says: RestartNext, N: 1, MaxRestarts: 3, In: time.Second}}},
		{"an app woken cold says its snapshot was dropped", onRequest, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, Message: "woken by a cold boot: its memory snapshot could not be restored and was dropped"}, "",
			Status{State: health.Running, Message: "woken by a cold boot: its memory snapshot could not be restored and was dropped"}},
		{"an idle app whose sleep failed says so", onRequest, &Instance{Recorded: "d1", Booted: true, Message: "could not be put to sleep"}, "",
			Status{State: health.Idle, Message: "could not be put to sleep"}},
		{"a stopped app is stopped", stopped, &Instance{Recorded: "d1", Booted: true}, "",
			Status{State: health.Stopped, Message: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := Observed{Now: t0, Instances: map[string]Instance{}, Problems: map[string]string{}}
			if tt.obs != nil {
				obs.Instances["a"] = *tt.obs
			}
			if tt.problem != "" {
				obs.Problems["a"] = tt.problem
			}
			if got := InstanceStatus(&tt.in, obs); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAnInstanceIsConvergedWhereItWasAskedToBe(t *testing.T) {
	tests := []struct {
		want desired.DesiredInstanceState
		got  health.State
		ok   bool
	}{
		{desired.StateRunning, health.Running, true},
		{desired.StateRunning, health.Idle, false},
		{desired.StateOnRequest, health.Idle, true},
		{desired.StateOnRequest, health.Running, true},
		{desired.StateOnRequest, health.Starting, false},
		{desired.StateStopped, health.Stopped, true},
		{desired.StateStopped, health.Running, false},
	}
	for _, tt := range tests {
		if Converged(tt.want, tt.got) != tt.ok {
			t.Errorf("Converged(%s, %s) = %v, want %v", tt.want, tt.got, !tt.ok, tt.ok)
		}
	}
}

func TestConvergedSince(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	for _, c := range []struct {
		name  string
		want  desired.DesiredInstanceState
		got   health.State
		since time.Time
		is    time.Time
	}{
		{"converged just now", desired.StateRunning, health.Running, time.Time{}, now},
		{"converged since earlier", desired.StateRunning, health.Running, t0, t0},
		{"on request and idle", desired.StateOnRequest, health.Idle, t0, t0},
		{"no longer converged", desired.StateRunning, health.Unhealthy, t0, time.Time{}},
		{"stopped and asked stopped", desired.StateStopped, health.Stopped, time.Time{}, now},
		{"never converged", desired.StateRunning, health.Starting, time.Time{}, time.Time{}},
	} {
		if got := ConvergedSince(c.want, c.got, c.since, now); !got.Equal(c.is) {
			t.Errorf("%s: %v, want %v", c.name, got, c.is)
		}
	}
}
