package reconcile

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/alpage/source"
)

type oneVersionDashboard string

func (d oneVersionDashboard) NodeVersion(context.Context, string) (string, bool, error) {
	return string(d), true, nil
}

// silentNode accepts connections and never answers, as a node behind a
// black hole does once the kernel has taken the connection.
func silentNode(t *testing.T) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().(*net.TCPAddr)
}

func TestAnUnreachableNodeFallsBackToTheDashboardWithinTheConnectTimeout(t *testing.T) {
	const connect = 300 * time.Millisecond
	ns, err := source.NewNodeStatusTimeout("", connect)
	if err != nil {
		t.Fatal(err)
	}
	addr := silentNode(t)
	f := &Fetcher{NodeStatus: ns, Dashboard: oneVersionDashboard("v1")}
	start := time.Now()
	got := f.version(context.Background(), "node", NodeFacts{Found: true, IP: addr.IP.String(), Port: uint32(addr.Port)}, nil)
	took := time.Since(start)
	if got.Version != "v1" || got.Source != FromDashboard {
		t.Fatalf("version %+v, want v1 via the dashboard", got)
	}
	if took > connect+time.Second {
		t.Fatalf("the fallback took %v, far past the connect timeout of %v", took, connect)
	}
}

// statusDashboard says a node's version and status.
type statusDashboard struct{ version, status string }

func (d statusDashboard) NodeVersion(context.Context, string) (string, bool, error) {
	return d.version, true, nil
}

func (d statusDashboard) Node(context.Context, string) (source.DashboardNode, bool, error) {
	return source.DashboardNode{GuestOSVersion: d.version, Status: d.status}, true, nil
}

// A node that does not answer within the first attempt costs only that
// when the dashboard says it is down; when the dashboard says it is up, it
// is asked again with the whole connect timeout.
func TestADeadNodeCostsTheFirstAttemptNotTheConnectTimeout(t *testing.T) {
	const connect = 3 * time.Second
	ns, err := source.NewNodeStatusTimeout("", connect)
	if err != nil {
		t.Fatal(err)
	}
	addr := silentNode(t)
	facts := NodeFacts{Found: true, IP: addr.IP.String(), Port: uint32(addr.Port)}
	f := &Fetcher{NodeStatus: ns, Dashboard: statusDashboard{"v1", "DOWN"}, FirstAttempt: 100 * time.Millisecond}
	start := time.Now()
	got := f.version(context.Background(), "node", facts, nil)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a node the dashboard says is down took %v", took)
	}
	if got.Version != "v1" || got.Source != FromDashboard || got.Err == "" {
		t.Fatalf("version %+v, want v1 via the dashboard, saying why", got)
	}
	f.Dashboard = statusDashboard{"v1", "UP"}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start = time.Now()
	got = f.version(ctx, "node", facts, nil)
	if took := time.Since(start); took < time.Second {
		t.Fatalf("a node the dashboard says is up was given up on after %v, before its second attempt", took)
	}
	if got.Version != "v1" || got.Source != FromDashboard {
		t.Fatalf("version %+v", got)
	}
}

// slowNode answers its status after delay, counting the reads.
type slowNode struct {
	delay time.Duration
	reads atomic.Int32
}

func (n *slowNode) Version(ctx context.Context, _ string, _ uint32) (string, error) {
	n.reads.Add(1)
	select {
	case <-time.After(n.delay):
		return "v-node", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// noPerNodeDashboard fails every per-node read: a test that gives the
// node's listed record must not need one.
type noPerNodeDashboard struct{ t *testing.T }

func (d noPerNodeDashboard) NodeVersion(context.Context, string) (string, bool, error) {
	d.t.Error("asked the dashboard for a node it had listed")
	return "", false, errors.New("not asked for")
}

func (d noPerNodeDashboard) Node(context.Context, string) (source.DashboardNode, bool, error) {
	d.t.Error("asked the dashboard for a node it had listed")
	return source.DashboardNode{}, false, errors.New("not asked for")
}

// A node the dashboard's list says is up is read once, however long past
// the first attempt it takes (a loaded machine's handshake): not cut short
// and asked again, and not replaced by the dashboard's version.
func TestANodeListedUpIsReadOnceAndNotCutShort(t *testing.T) {
	for _, status := range []string{"UP", "UNASSIGNED", "DEGRADED"} {
		node := &slowNode{delay: 150 * time.Millisecond}
		f := &Fetcher{NodeStatus: node, Dashboard: noPerNodeDashboard{t}, FirstAttempt: 20 * time.Millisecond}
		got := f.version(context.Background(), "node", NodeFacts{Found: true, IP: "::1"},
			&source.DashboardNode{NodeID: "node", GuestOSVersion: "v-dashboard", Status: status})
		if got.Version != "v-node" || got.Source != FromNode || got.Err != "" {
			t.Errorf("listed %s: %+v, want the node's own version", status, got)
		}
		if n := node.reads.Load(); n != 1 {
			t.Errorf("listed %s: read %d times, want once", status, n)
		}
	}
}

// A node the list says is down costs the first attempt, and the listed
// record is the answer: no request for it alone.
func TestANodeListedDownCostsTheFirstAttemptAndUsesTheList(t *testing.T) {
	node := &slowNode{delay: time.Hour}
	f := &Fetcher{NodeStatus: node, Dashboard: noPerNodeDashboard{t}, FirstAttempt: 50 * time.Millisecond}
	start := time.Now()
	got := f.version(context.Background(), "node", NodeFacts{Found: true, IP: "::1"},
		&source.DashboardNode{NodeID: "node", GuestOSVersion: "v-dashboard", Status: "DOWN"})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a node listed down took %v", took)
	}
	if got.Version != "v-dashboard" || got.Source != FromDashboard || !strings.Contains(got.Err, "DOWN") {
		t.Fatalf("%+v, want the listed version, saying why", got)
	}
	if n := node.reads.Load(); n != 1 {
		t.Fatalf("read %d times, want once", n)
	}
}
