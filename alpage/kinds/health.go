package kinds

import (
	"fmt"

	"alpnib.dev/alpage/decentral"
)

// Node healths, as HealthFacts.Health says them (alpage/source.Health's
// words: dre's HealthStatus).
const (
	HealthHealthy  = "healthy"
	HealthDegraded = "degraded"
	HealthDown     = "down"
	HealthUnknown  = "unknown"
)

// HealthFacts is what is known of a node's health: what the ICP dashboard
// lists it as, what its own status endpoint says, and the verdict of the
// two (the worse of them when both answer; unknown when neither does).
type HealthFacts struct {
	// Health is healthy, degraded, down or unknown.
	Health string `json:"health"`
	// Why says what the verdict rests on, as a clause ("the ICP dashboard
	// lists it DOWN").
	Why string `json:"why"`
	// Dashboard is true when the verdict rests on the dashboard, a third
	// party.
	Dashboard bool `json:"dashboard,omitempty"`
}

// Healthy says the node is known to be healthy.
func (h HealthFacts) Healthy() bool { return h.Health == HealthHealthy }

// joinHealth checks the health of node id joining a subnet: a node not known
// healthy is refused, or with force a warning, as an unelected version is.
func joinHealth(id string, h HealthFacts, force bool) Check {
	c := Check{Subject: id}
	if h.Dashboard {
		c.Source = dashboardLabel
	}
	if h.Health == "" {
		h = HealthFacts{Health: HealthUnknown, Why: "its health was not read"}
	}
	if h.Healthy() {
		c.Severity, c.Message = OK, fmt.Sprintf("node %s is healthy: %s", id, h.Why)
		return c
	}
	if force {
		c.Severity, c.Message = Warning, fmt.Sprintf("node %s is %s: %s; adding it anyway (--force)", id, h.Health, h.Why)
		return c
	}
	c.Severity = Refused
	c.Message = fmt.Sprintf("node %s is %s: %s; a member that is not healthy uses up a fault the subnet could tolerate, so alp refuses to add it: add a healthy node instead, or pass --force", id, h.Health, h.Why)
	return c
}

// dashboardLabel labels a finding resting on the dashboard (alpage/source's
// DashboardLabel; kinds does not import the clients).
const dashboardLabel = "via ICP dashboard"

// progressAfter checks that subnet, whose members after the change are
// after, still has more than two thirds of them healthy, the most it can
// lose and make progress (decentral.MakesProgress). It is a warning when
// the change removes nodes and the subnet does not: a removal of a
// healthy member then stalls it, and one of an unhealthy member leaves it
// no better.
func progressAfter(subnet string, after []string, health map[string]HealthFacts) (Check, bool) {
	healthy := 0
	var not []string
	for _, id := range after {
		if health[id].Healthy() {
			healthy++
		} else {
			not = append(not, id)
		}
	}
	if decentral.MakesProgress(healthy, len(after)) {
		return Check{}, false
	}
	need := len(after) - decentral.FaultsTolerated(len(after))
	return Check{Severity: Warning, Message: fmt.Sprintf("after this change subnet %s has %d members, %d of them known healthy; it makes progress only with at least %d healthy (more than two thirds); not known healthy: %s", subnet, len(after), healthy, need, shortList(not))}, true
}
