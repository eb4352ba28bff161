package health

import (
	"testing"
	"time"
)

var check = Check{Interval: time.Second, Grace: 10 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3}

func probe(ok bool) *bool { return &ok }

func TestTheStateMachine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	afterGrace := t0.Add(20 * time.Second)
	tests := []struct {
		name string
		r    Record
		in   Input
		want State
	}{
		{"a failed VM is failed", Record{State: Running, EverHealthy: true}, Input{VMFailed: true, Active: true}, Failed},
		{"an on-request app that is not up is idle", Record{State: Running}, Input{Desired: "on-request"}, Idle},
		{"an on-request app waiting for room is pending", Record{}, Input{Desired: "on-request", Waiting: true}, Pending},
		{"a stopped app is stopped", Record{State: Running}, Input{Desired: "stopped"}, Stopped},
		{"a running app that is not up is pending", Record{}, Input{Desired: "running"}, Pending},
		{"a fresh start without a probe is starting", Started(t0), Input{Active: true, Now: t0}, Starting},
		{"one success below the threshold is still starting", Started(t0), Input{Active: true, Probe: probe(true), Now: t0}, Starting},
		{"enough successes make it running", Record{State: Starting, Successes: 1, StartedAt: t0}, Input{Active: true, Probe: probe(true), Now: t0}, Running},
		{"failures inside the grace period do not count", Record{State: Starting, Failures: 2, StartedAt: t0}, Input{Active: true, Probe: probe(false), Now: t0.Add(time.Second)}, Starting},
		{"failures after grace fail an app that never was healthy", Record{State: Starting, Failures: 2, StartedAt: t0}, Input{Active: true, Probe: probe(false), Now: afterGrace}, Failed},
		{"failures after grace make a once healthy app unhealthy", Record{State: Running, EverHealthy: true, Failures: 2, StartedAt: t0}, Input{Active: true, Probe: probe(false), Now: afterGrace}, Unhealthy},
		{"one failure leaves a running app running", Record{State: Running, EverHealthy: true, Successes: 5, StartedAt: t0}, Input{Active: true, Probe: probe(false), Now: afterGrace}, Running},
		{"an unhealthy app that answers again is running", Record{State: Unhealthy, EverHealthy: true, Successes: 1, StartedAt: t0}, Input{Active: true, Probe: probe(true), Now: afterGrace}, Running},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Step(check, tt.r, tt.in).State; got != tt.want {
				t.Fatalf("state = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestAStartingInstanceIsProbedAtLeastEvery250ms(t *testing.T) {
	if got := check.ProbeInterval(Starting); got != 250*time.Millisecond {
		t.Fatalf("starting interval = %v", got)
	}
	if got := check.ProbeInterval(Running); got != time.Second {
		t.Fatalf("running interval = %v", got)
	}
	fast := Check{Interval: 100 * time.Millisecond}
	if got := fast.ProbeInterval(Starting); got != 100*time.Millisecond {
		t.Fatalf("a shorter interval was not kept while starting: %v", got)
	}
}

func TestRunningRecordsWhenItWasLastHealthy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := Step(check, Record{State: Starting, Successes: 1, StartedAt: t0}, Input{Active: true, Probe: probe(true), Now: t0.Add(time.Second)})
	if !r.LastHealthyAt.Equal(t0.Add(time.Second)) || !r.EverHealthy {
		t.Fatalf("record = %+v", r)
	}
}
