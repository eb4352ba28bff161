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
			Status{health.Failed, "this host cannot run it: no raw proxy"}},
		{"a start of this deployment that failed fails it", running, &Instance{StartFailure: "its layers could not be made ready: 404", StartFailed: "d1"}, "",
			Status{health.Failed, "its layers could not be made ready: 404"}},
		{"a start of an older deployment that failed says nothing of this one", running, &Instance{StartFailure: "boom", StartFailed: "d0"}, "",
			Status{health.Pending, "waiting to be started: the next converge pass boots it"}},
		{"a failed start of an app asked stopped is not reported", stopped, &Instance{StartFailure: "boom", StartFailed: "d1"}, "",
			Status{health.Stopped, ""}},
		{"a deployment out of restarts says how many and what to do", running, &Instance{Recorded: "d1", Budget: spent, FailReason: "the app exited with code 1"}, "",
			Status{health.Failed, "out of restarts: it was restarted 3 times and failed again (restartPolicy.maxRestarts is 3); last: the app exited with code 1. Deploy a new deploymentId to try again"}},
		{"a new deployment is not out of its predecessor's restarts", running, &Instance{Recorded: "d0", Budget: backoff.Budget{DeploymentID: "d0", Exhausted: true}}, "",
			Status{health.Pending, "waiting to be started: the next converge pass boots it"}},
		{"a guest up reports its health", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Running}, "",
			Status{health.Running, ""}},
		{"a guest up on the old deployment while the new one is starting is starting", running, &Instance{Recorded: "d1", DeploymentID: "d0", VM: Up, Health: health.Running, Acting: true}, "",
			Status{health.Starting, ""}},
		{"an unhealthy guest says why and when it is restarted", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Unhealthy, FailReason: "GET /healthz: 500", FailedAt: t0.Add(-234 * time.Millisecond), Budget: backoff.Budget{DeploymentID: "d1"}}, "",
			Status{health.Unhealthy, "GET /healthz: 500; it is restarted in 800ms"}},
		{"a failed guest whose restart is due says only why", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Failed, FailReason: "GET /healthz: 500", FailedAt: t0.Add(-time.Minute), Budget: backoff.Budget{DeploymentID: "d1"}}, "",
			Status{health.Failed, "GET /healthz: 500"}},
		{"an exited guest says which restart comes when", running, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Exited, FailedAt: t0, FailReason: "the app exited with code 3", Budget: backoff.Budget{DeploymentID: "d1", Window: 1, Total: 1, LastStart: t0.Add(-time.Minute)}}, "",
			Status{health.Failed, "the app exited with code 3; restart 2 of 3 in 2s"}},
		{"a start under way is starting", running, &Instance{Recorded: "d1", Acting: true}, "",
			Status{health.Starting, ""}},
		{"a start held back says why", running, &Instance{Note: "waiting to be started: every slot of this host is taken (max_apps = 1)"}, "",
			Status{health.Pending, "waiting to be started: every slot of this host is taken (max_apps = 1)"}},
		{"an on-request app before its first boot is pending", onRequest, nil, "",
			Status{health.Pending, "waiting to be started: the next converge pass boots it"}},
		{"an on-request app booted once and down is idle", onRequest, &Instance{Recorded: "d1", Booted: true, Sleeping: true}, "",
			Status{health.Idle, ""}},
		{"an on-request app whose wake failed says why and which restart comes when", onRequest, &Instance{Recorded: "d1", DeploymentID: "d1", Booted: true, FailedAt: t0, FailReason: "the microVM could not be woken: refused; its memory snapshot was dropped and it is booted again from its volume", Budget: backoff.Budget{DeploymentID: "d1", LastStart: t0.Add(-time.Minute)}}, "",
			Status{health.Failed, "the microVM could not be woken: refused; its memory snapshot was dropped and it is booted again from its volume; restart 1 of 3 in 1s"}},
		{"an app woken cold says its snapshot was dropped", onRequest, &Instance{Recorded: "d1", DeploymentID: "d1", VM: Up, Health: health.Running, Booted: true, Message: "woken by a cold boot: its memory snapshot could not be restored and was dropped"}, "",
			Status{health.Running, "woken by a cold boot: its memory snapshot could not be restored and was dropped"}},
		{"an idle app whose sleep failed says so", onRequest, &Instance{Recorded: "d1", Booted: true, Message: "could not be put to sleep"}, "",
			Status{health.Idle, "could not be put to sleep"}},
		{"a stopped app is stopped", stopped, &Instance{Recorded: "d1", Booted: true}, "",
			Status{health.Stopped, ""}},
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
