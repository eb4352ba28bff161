package plan

import (
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

func TestAGuestIsProbedAsItsDeploymentAsksAndByDefaultOtherwise(t *testing.T) {
	in := instance("a", "d1", desired.StateRunning)
	in.Config.HttpPort = 3000
	in.Config.HealthCheck = desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/healthz", IntervalMs: 500, TimeoutMs: 2000,
		GracePeriodMs: 10000, HealthyThreshold: 2, UnhealthyThreshold: 4}
	asked := Probe{Kind: desired.HealthHTTP, Path: "/healthz", Port: 3000, Timeout: 2 * time.Second,
		Check: health.Check{Interval: 500 * time.Millisecond, Grace: 10 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 4}}
	boot := in
	boot.Config.HealthCheck = desired.HealthCheck{Kind: desired.HealthBootCompleted}
	bootDefault := DefaultProbe
	bootDefault.Kind, bootDefault.Port = desired.HealthBootCompleted, 3000
	zero := in
	zero.Config.HealthCheck.IntervalMs, zero.Config.HealthCheck.TimeoutMs = 0, 0
	zeroed := asked
	zeroed.Check.Interval, zeroed.Timeout = time.Second, time.Second
	tests := []struct {
		name string
		in   *desired.DesiredInstance
		dep  string
		want Probe
	}{
		{"the document's check, for its deployment", &in, "d1", asked},
		{"another deployment's guest: the default", &in, "d0", DefaultProbe},
		{"no instance listed: the default", nil, "d1", DefaultProbe},
		{"bootCompleted with no interval keeps the default's timings", &boot, "d1", bootDefault},
		{"an interval or timeout of 0 is a second", &zero, "d1", zeroed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProbeOf(tt.in, tt.dep); got != tt.want {
				t.Fatalf("ProbeOf = %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if d := DefaultProbe; d.Kind != desired.HealthTCP || d.Check.Interval != time.Second || d.Check.Grace != 30*time.Second ||
		d.Check.HealthyThreshold != 1 || d.Check.UnhealthyThreshold != 3 || d.Timeout != time.Second {
		t.Fatalf("the default probe is %+v", d)
	}
}
