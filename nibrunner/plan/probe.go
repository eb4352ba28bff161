package plan

import (
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

// Probe is how a guest's health is checked: what is asked (Kind, Path on
// Port), how often and how leniently (Check), and how long one probe may
// take (Timeout).
type Probe struct {
	Kind    desired.HealthCheckKind
	Path    string
	Port    int
	Check   health.Check
	Timeout time.Duration
}

// DefaultProbe is the health check of a guest the document does not
// describe (adopted from an older daemon, or of another deployment than
// the document's): a TCP connect every second, 30 s of grace, healthy at
// the first answer and unhealthy after three misses, each probe given a
// second.
var DefaultProbe = Probe{
	Kind:    desired.HealthTCP,
	Check:   health.Check{Interval: time.Second, Grace: 30 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 3},
	Timeout: time.Second,
}

// ProbeOf is the health check of a guest of deployment dep, given the
// instance the document lists for its app (nil when none). The
// document's check applies to its own deployment only; its kind, path and
// port always do, and its timings too except for a bootCompleted check
// that names no interval, which keeps the default's. An interval or a
// timeout of 0 is a second.
func ProbeOf(in *desired.DesiredInstance, dep string) Probe {
	p := DefaultProbe
	if in != nil && string(in.DeploymentId) == dep {
		hc := in.Config.HealthCheck
		p.Kind, p.Path, p.Port = hc.Kind, hc.Path, int(in.Config.HttpPort)
		if hc.Kind != desired.HealthBootCompleted || hc.IntervalMs > 0 {
			p.Check = health.Check{
				Interval: ms(hc.IntervalMs), Grace: ms(hc.GracePeriodMs),
				HealthyThreshold: int(hc.HealthyThreshold), UnhealthyThreshold: int(hc.UnhealthyThreshold),
			}
			p.Timeout = ms(hc.TimeoutMs)
		}
	}
	if p.Check.Interval <= 0 {
		p.Check.Interval = time.Second
	}
	if p.Timeout <= 0 {
		p.Timeout = time.Second
	}
	return p
}

// ms reads a document's count of milliseconds as a duration, saturating.
var ms = backoff.Millis[uint64]
