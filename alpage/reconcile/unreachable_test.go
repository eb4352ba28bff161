package reconcile

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
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

// slowNode answers its status after delay, counting the reads and
// keeping the bound each read was given.
type slowNode struct {
	delay time.Duration
	reads atomic.Int32

	mu     sync.Mutex
	bounds []readBound // each read's
}

// readBound is the deadline a read was given: whether it had one, and how
// far off it was when the read began.
type readBound struct {
	set  bool
	left time.Duration
}

func (n *slowNode) Version(ctx context.Context, _ string, _ uint32) (string, error) {
	n.reads.Add(1)
	var b readBound
	if d, ok := ctx.Deadline(); ok {
		b = readBound{true, time.Until(d)}
	}
	n.mu.Lock()
	n.bounds = append(n.bounds, b)
	n.mu.Unlock()
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

// firstBound is the bound the node's first read was given.
func (n *slowNode) firstBound() readBound {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.bounds) == 0 {
		return readBound{}
	}
	return n.bounds[0]
}

// A node the dashboard's list says is up, or a healthy spare, is read once,
// however long past the first attempt it takes (a loaded machine's
// handshake): not cut short and asked again, and not replaced by the
// dashboard's version.
func TestANodeListedUpIsReadOnceAndNotCutShort(t *testing.T) {
	for _, status := range []string{"UP", "UNASSIGNED"} {
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
		if b := node.firstBound(); b.set {
			t.Errorf("listed %s: the read was bounded by %v, want the whole connect timeout", status, b.left)
		}
	}
}

// A node the list says is down, or degraded, gets only the first attempt,
// and the listed record is the answer, carrying the listed status: no
// request for it alone.
func TestANodeListedDownOrDegradedGetsTheFirstAttemptAndUsesTheList(t *testing.T) {
	const first = 50 * time.Millisecond
	for _, status := range []string{"DOWN", "DEGRADED"} {
		node := &slowNode{delay: time.Hour}
		f := &Fetcher{NodeStatus: node, Dashboard: noPerNodeDashboard{t}, FirstAttempt: first}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got := f.version(ctx, "node", NodeFacts{Found: true, IP: "::1"},
			&source.DashboardNode{NodeID: "node", GuestOSVersion: "v-dashboard", Status: status})
		cancel()
		if b := node.firstBound(); !b.set || b.left > first {
			t.Errorf("listed %s: the read was bounded by %+v, want the first attempt (%v)", status, b, first)
		}
		if got.Version != "v-dashboard" || got.Source != FromDashboard || got.DashboardStatus != status || !strings.Contains(got.Err, status) {
			t.Errorf("listed %s: %+v, want the listed version, saying why", status, got)
		}
		if n := node.reads.Load(); n != 1 {
			t.Errorf("listed %s: read %d times, want once", status, n)
		}
	}
}

// A node the dashboard does not list gets the first attempt; when it
// misses it, the dashboard's own record of the node decides: failing (DOWN,
// DEGRADED) makes its version the answer, with the status; healthy (UP,
// UNASSIGNED) or a status alp does not know asks the node again with the
// whole connect timeout, and the node's own word is the answer.
func TestWhatTheDashboardSaysOfAnUnlistedSlowNodeDecidesASecondRead(t *testing.T) {
	for status, again := range map[string]bool{"DOWN": false, "DEGRADED": false, "UP": true, "UNASSIGNED": true, "UNRECOGNIZED": true, "": true} {
		node := &slowNode{delay: 300 * time.Millisecond}
		f := &Fetcher{NodeStatus: node, Dashboard: statusDashboard{"v-dashboard", status}, FirstAttempt: 20 * time.Millisecond}
		got := f.version(context.Background(), "node", NodeFacts{Found: true, IP: "::1"}, nil)
		want := VersionFacts{Version: "v-dashboard", Source: FromDashboard, DashboardStatus: status}
		if again {
			want = VersionFacts{Version: "v-node", Source: FromNode}
		}
		if got.Version != want.Version || got.Source != want.Source || got.DashboardStatus != want.DashboardStatus {
			t.Errorf("dashboard says %q: %+v, want %+v", status, got, want)
		}
		if n, want := node.reads.Load(), map[bool]int32{false: 1, true: 2}[again]; n != want {
			t.Errorf("dashboard says %q: read %d times, want %d", status, n, want)
		}
	}
}

// refusingNode refuses every status read at once.
type refusingNode struct{}

func (refusingNode) Version(context.Context, string, uint32) (string, error) {
	return "", errors.New("connection refused")
}

// A listed node that answers nothing itself is answered from the list,
// whatever its status, and the answer carries the status.
func TestAListedNodeThatRefusesIsAnsweredFromTheListWithItsStatus(t *testing.T) {
	for _, status := range []string{"UP", "UNASSIGNED", "DEGRADED", "DOWN"} {
		f := &Fetcher{NodeStatus: refusingNode{}, Dashboard: noPerNodeDashboard{t}}
		got := f.version(context.Background(), "node", NodeFacts{Found: true, IP: "::1"},
			&source.DashboardNode{NodeID: "node", GuestOSVersion: "v-dashboard", Status: status})
		if got.Version != "v-dashboard" || got.Source != FromDashboard || got.DashboardStatus != status || !strings.Contains(got.Err, "refused") {
			t.Errorf("listed %s: %+v, want the listed version and status, and the node's error", status, got)
		}
	}
}

// countingDashboard answers every per-node read with node, counting them.
type countingDashboard struct {
	node  source.DashboardNode
	reads atomic.Int32
}

func (d *countingDashboard) NodeVersion(ctx context.Context, id string) (string, bool, error) {
	n, found, err := d.Node(ctx, id)
	return n.GuestOSVersion, found, err
}

func (d *countingDashboard) Node(context.Context, string) (source.DashboardNode, bool, error) {
	d.reads.Add(1)
	return d.node, true, nil
}

// A listed record without a version is not the dashboard's last word: the
// node's own dashboard record is asked, once, as it would be with no list,
// for the fallback of a node that refuses and for the first attempt's
// decision on one that is slow.
func TestAListedRecordWithoutAVersionAsksTheNodesOwnRecord(t *testing.T) {
	for _, c := range []struct {
		listed string
		node   NodeStatus
	}{{"UP", refusingNode{}}, {"UNASSIGNED", refusingNode{}}, {"DOWN", &slowNode{delay: time.Hour}}, {"DEGRADED", &slowNode{delay: time.Hour}}} {
		dash := &countingDashboard{node: source.DashboardNode{NodeID: "node", GuestOSVersion: "v-own", Status: c.listed}}
		f := &Fetcher{NodeStatus: c.node, Dashboard: dash, FirstAttempt: 20 * time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got := f.version(ctx, "node", NodeFacts{Found: true, IP: "::1"}, &source.DashboardNode{NodeID: "node", Status: c.listed})
		cancel()
		if got.Version != "v-own" || got.Source != FromDashboard || got.DashboardStatus != c.listed {
			t.Errorf("listed %s without a version: %+v, want the node's own dashboard record", c.listed, got)
		}
		if n := dash.reads.Load(); n != 1 {
			t.Errorf("listed %s without a version: %d per-node dashboard read(s), want 1", c.listed, n)
		}
		if n, ok := c.node.(*slowNode); ok && n.reads.Load() != 1 {
			t.Errorf("listed %s without a version: the node was read %d times, want once", c.listed, n.reads.Load())
		}
	}
}
