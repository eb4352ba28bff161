package explain

import (
	"testing"
	"time"

	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/plan"
)

// The restarts an instance's report names, in words (plan's
// TestInstanceStatuses pins which restart each status names).
func TestAnInstancesStatusSaysItsMessageThenTheRestartItNames(t *testing.T) {
	for _, c := range []struct {
		s    plan.Status
		want string
	}{
		{plan.Status{State: health.Failed, Message: "the app exited with code 1", Restart: plan.RestartNote{Says: plan.RestartOutOf, N: 3, MaxRestarts: 3}},
			"out of restarts: it was restarted 3 times and failed again (restartPolicy.maxRestarts is 3); last: the app exited with code 1. Deploy a new deploymentId to try again"},
		{plan.Status{State: health.Unhealthy, Message: "GET /healthz: 500", Restart: plan.RestartNote{Says: plan.RestartIn, In: 766 * time.Millisecond}},
			"GET /healthz: 500; it is restarted in 800ms"},
		{plan.Status{State: health.Failed, Message: "the app exited with code 3", Restart: plan.RestartNote{Says: plan.RestartNext, N: 2, MaxRestarts: 3, In: 2 * time.Second}},
			"the app exited with code 3; restart 2 of 3 in 2s"},
		{plan.Status{State: health.Failed, Message: "the microVM could not be woken: refused", Restart: plan.RestartNote{Says: plan.RestartNext, N: 1, MaxRestarts: 3, In: time.Second}},
			"the microVM could not be woken: refused; restart 1 of 3 in 1s"},
		{plan.Status{State: health.Pending, Message: "waiting to be started: the next converge pass boots it"},
			"waiting to be started: the next converge pass boots it"},
		{plan.Status{State: health.Running}, ""},
	} {
		if got := StatusMessage(c.s); got != c.want {
			t.Errorf("%+v says\n%q\nwant\n%q", c.s, got, c.want)
		}
	}
}

// A wake's refusals, in words (plan's TestTheWakesAnswers pins which).
func TestAWakesRefusalsInWords(t *testing.T) {
	for _, c := range []struct {
		r    plan.WakeRefusal
		want string
	}{
		{plan.WakeRefusal{}, ""},
		{plan.WakeRefusal{Why: plan.WakeOutOfRestarts}, "it is out of restarts until a new deploymentId"},
		{plan.WakeRefusal{Why: plan.WakePlannerFirst, Kind: plan.Sleep}, "the planner asks sleep first"},
		{plan.WakeRefusal{Why: plan.WakeAwaitsRestart}, "it failed and waits for its restart"},
		{plan.WakeRefusal{Why: plan.WakeHeldBack, Note: "waiting to be started: every slot of this host is taken (max_apps = 1)"},
			"nothing to wake: waiting to be started: every slot of this host is taken (max_apps = 1)"},
		{plan.WakeRefusal{Why: plan.WakeVolumeNotReady}, "nothing to wake: its volume is not ready"},
	} {
		if got := WakeRefused(c.r); got != c.want {
			t.Errorf("%+v says %q, want %q", c.r, got, c.want)
		}
	}
}
