package reconcile

import (
	"context"
	"net"
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
	got := f.version(context.Background(), "node", NodeFacts{Found: true, IP: addr.IP.String(), Port: uint32(addr.Port)})
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
	got := f.version(context.Background(), "node", facts)
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
	got = f.version(ctx, "node", facts)
	if took := time.Since(start); took < time.Second {
		t.Fatalf("a node the dashboard says is up was given up on after %v, before its second attempt", took)
	}
	if got.Version != "v1" || got.Source != FromDashboard {
		t.Fatalf("version %+v", got)
	}
}
