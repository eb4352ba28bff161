package devnet

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/ic/principal"
)

// outageFleet has one reachable node, one that refuses and one that is a
// blackhole.
func outageFleet(t *testing.T) (*Fleet, map[Outage]string) {
	t.Helper()
	id := func(tag string) string { return principal.SelfAuthenticating([]byte(tag)).String() }
	no := false
	nodes := map[Outage]string{Refuse: id("refuses"), Blackhole: id("blackhole")}
	f := &Fleet{
		DataCenters:   []FleetDataCenter{{ID: "zh1"}},
		NodeProviders: []FleetProvider{{ID: id("provider")}},
		NodeOperators: []FleetOperator{{ID: id("operator"), Provider: id("provider"), DC: "zh1"}},
		Versions:      []FleetVersion{{ID: "v1"}},
		Nodes: []FleetNode{
			{ID: id("up"), Operator: id("operator"), Version: "v1"},
			{ID: nodes[Refuse], Operator: id("operator"), Version: "v1", Reachable: &no}, // refuse is the default
			{ID: nodes[Blackhole], Operator: id("operator"), Version: "v1", Reachable: &no, Unreachable: Blackhole},
		},
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	return f, nodes
}

// recordedEndpoint is the host:port the node's registry record names.
func recordedEndpoint(t *testing.T, d *Devnet, node string) string {
	t.Helper()
	rec, ok, err := d.Registry.Node(principal.MustDecode(node))
	if err != nil || !ok || rec.HTTP == nil {
		t.Fatalf("node %s has no http endpoint in its record (found %v, %v)", node, ok, err)
	}
	ip := net.ParseIP(rec.HTTP.IPAddr)
	if ip == nil || !ip.IsLoopback() {
		t.Fatalf("node %s is recorded at %q, which is not a loopback address", node, rec.HTTP.IPAddr)
	}
	return net.JoinHostPort(rec.HTTP.IPAddr, strconv.FormatUint(uint64(rec.HTTP.Port), 10))
}

func TestEveryNodeOfEveryFleetIsRecordedOnLoopback(t *testing.T) {
	d, f := startDefaultFleet(t)
	for _, n := range f.Nodes {
		recordedEndpoint(t, d, n.ID)
	}
}

func TestAnUnreachableNodeThatRefusesIsRefusedAtOnce(t *testing.T) {
	f, nodes := outageFleet(t)
	d, err := Start(context.Background(), Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	addr := recordedEndpoint(t, d, nodes[Refuse])
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("a connection to the refusing node at %s was accepted", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the refusal took %s", took)
	}
	// The port stays held: nobody else can listen there while the devnet runs.
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener could take the refusing node's port %s", addr)
	}
}

func TestAnUnreachableNodeThatIsABlackholeAcceptsAndNeverAnswers(t *testing.T) {
	f, nodes := outageFleet(t)
	d, err := Start(context.Background(), Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	addr := recordedEndpoint(t, d, nodes[Blackhole])
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("the blackhole at %s did not accept: %v", addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /api/v2/status HTTP/1.1\r\nHost: node\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var buf [1]byte
	if n, err := c.Read(buf[:]); !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
		t.Fatalf("the blackhole answered: %d byte(s), %v", n, err)
	}
	// Closing the devnet drops the held connection.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf[:]); err == nil || isTimeout(err) {
		t.Fatalf("the held connection outlived the devnet: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestAFleetRefusesAnOutageItCannotHave(t *testing.T) {
	f, _ := outageFleet(t)
	f.Nodes[0].Unreachable = Blackhole // a reachable node
	f.Nodes[1].Unreachable = "flaky"
	err := f.check()
	for _, want := range []string{`unreachable is "blackhole" but the node is reachable`, `unreachable must be "refuse" or "blackhole", not "flaky"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := ParseFleet([]byte(`{"nodes": [{"id": "aaaaa-aa", "ipv6": "2001:db8::1"}]}`)); err == nil || !strings.Contains(err.Error(), `unknown field "ipv6"`) || !strings.Contains(err.Error(), "drop ipv6") {
		t.Errorf("a node with an address of its own was not refused: %v", err)
	}
}
