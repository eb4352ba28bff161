package preflight

import (
	"context"
	"fmt"
	"sync"

	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/nns"
)

// NodeLister is the dashboard's list of every node; *source.Dashboard is
// one. A Dashboard that is not one tells no node's health.
type NodeLister interface {
	Nodes(ctx context.Context) (map[string]source.DashboardNode, error)
}

// NodeHealth reads a node's own replica_health_status;
// *source.NodeStatus is one.
type NodeHealth interface {
	Health(ctx context.Context, ip string, port uint32) (string, error)
}

// healthParallel bounds the node status reads in flight.
const healthParallel = 32

// health reads each node's health: the dashboard's list once, and each
// node's own status endpoint (its address from its node record at the
// pinned version) beside it.
func (f *Fetcher) health(ctx context.Context, ids []string) map[string]kinds.HealthFacts {
	var (
		listed  map[string]source.DashboardNode
		listErr error
		wg      sync.WaitGroup
	)
	lister, _ := f.Dashboard.(NodeLister)
	if lister == nil {
		listErr = fmt.Errorf("no dashboard configured")
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			listed, listErr = lister.Nodes(ctx)
		}()
	}
	own := make([]ownHealth, len(ids))
	sem := make(chan struct{}, healthParallel)
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			own[i] = f.ownHealth(ctx, id)
		}()
	}
	wg.Wait()
	out := make(map[string]kinds.HealthFacts, len(ids))
	for i, id := range ids {
		var d *source.DashboardNode
		if n, ok := listed[id]; ok {
			d = &n
		}
		out[id] = judgeHealth(d, listErr, own[i])
	}
	return out
}

// ownHealth is what a node's own status endpoint said, or why it did not.
type ownHealth struct {
	status string
	err    error
}

func (f *Fetcher) ownHealth(ctx context.Context, id string) ownHealth {
	if f.NodeStatus == nil {
		return ownHealth{err: fmt.Errorf("no node status client")}
	}
	raw, _, found, err := f.Registry.GetValue(ctx, nns.NodeRecordKey(id), 0)
	if err != nil || !found {
		return ownHealth{err: fmt.Errorf("no node record to find its address in")}
	}
	var rec nns.NodeRecordPB
	if err := rec.Unmarshal(raw); err != nil || rec.HTTP == nil {
		return ownHealth{err: fmt.Errorf("its node record has no http endpoint")}
	}
	s, err := f.NodeStatus.Health(ctx, rec.HTTP.IPAddr, rec.HTTP.Port)
	return ownHealth{status: s, err: err}
}

// judgeHealth is the verdict of the dashboard's entry d (nil: not listed,
// or the list was not read, listErr) and the node's own word: the worse
// of the two that answered, unknown when neither did. The node's own
// status endpoint is asked "when reachable": one that cannot be reached
// leaves the verdict to the dashboard.
func judgeHealth(d *source.DashboardNode, listErr error, own ownHealth) kinds.HealthFacts {
	var dash source.Health = source.HealthUnknown
	dashWhy := "the ICP dashboard does not list it"
	switch {
	case d != nil:
		dash = d.Health()
		dashWhy = fmt.Sprintf("the ICP dashboard lists it %s", quoteStatus(d.Status))
		if d.Alertname != "" {
			dashWhy += fmt.Sprintf(" (alert %s)", d.Alertname)
		}
	case listErr != nil:
		dashWhy = fmt.Sprintf("the ICP dashboard's node list could not be read (%v)", listErr)
	}
	var self source.Health = source.HealthUnknown
	selfWhy := ""
	switch {
	case own.err != nil && d != nil && dash != source.HealthUnknown:
		// the dashboard answers; why the node did not is beside the point
		selfWhy = "its own status endpoint did not answer"
	case own.err != nil:
		selfWhy = fmt.Sprintf("its own status endpoint did not answer (%v)", own.err)
	case own.status == source.ReplicaHealthy:
		self, selfWhy = source.Healthy, "its own status endpoint says healthy"
	default:
		self, selfWhy = source.Degraded, fmt.Sprintf("its own status endpoint says %s", own.status)
	}
	if dash == source.HealthUnknown && self == source.HealthUnknown {
		return kinds.HealthFacts{Health: kinds.HealthUnknown, Why: dashWhy + ", and " + selfWhy}
	}
	if healthRank(self) > healthRank(dash) {
		// the node's own word decides; the dashboard's is said beside it
		return kinds.HealthFacts{Health: string(self), Why: selfWhy + ", and " + dashWhy}
	}
	return kinds.HealthFacts{Health: string(dash), Why: dashWhy + ", and " + selfWhy, Dashboard: true}
}

// healthRank orders healths worst last; unknown is below every answer.
func healthRank(h source.Health) int {
	switch h {
	case source.Down:
		return 3
	case source.Degraded:
		return 2
	case source.Healthy:
		return 1
	}
	return 0
}

// quoteStatus is the dashboard's status word, quoted when alp does not
// know it (a third party's text).
func quoteStatus(s string) string {
	switch s {
	case "UP", "UNASSIGNED", "DEGRADED", "DOWN":
		return s
	}
	return fmt.Sprintf("%q", s)
}
