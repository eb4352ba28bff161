package proxy

import (
	"bufio"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

// manyFields is issue 28's CPU attack: a head of n tiny fields and a
// Connection field naming one more, which the old per-field check read
// every Connection field for (quadratic: 0.43 s of CPU for 12,000).
func manyFields(n int) string {
	return "GET / HTTP/1.1\r\nHost: shop.example.com\r\n" + strings.Repeat("a:\r\n", n) + "Connection: x\r\n\r\n"
}

// headCost is the least time, of a few tries, to read, parse and
// forward the head of req with no bound on its field count.
func headCost(t testing.TB, req string) time.Duration {
	h := &h1conn{p: &Proxy{}, client: []byte("127.0.0.1"), id: []byte("id")}
	w := bufio.NewWriterSize(io.Discard, 64<<10)
	best := time.Duration(1 << 62)
	for range 5 {
		r := bufio.NewReaderSize(strings.NewReader(req), 4<<10)
		start := time.Now()
		if err := h.req.readMax(r, 1<<20); err != nil {
			t.Fatal(err)
		}
		if err := h.req.parseRequest(); err != nil {
			t.Fatal(err)
		}
		h.writeRequestHead(w, h.req.bytes(h.req.first[1]), h.req.bytes(h.req.host))
		best = min(best, time.Since(start))
	}
	return best
}

func TestTwelveThousandFieldsCostLinearTimeUnderFiveMilliseconds(t *testing.T) {
	small, big := headCost(t, manyFields(240)), headCost(t, manyFields(12000))
	t.Logf("240 fields: %v; 12,000 fields: %v (race slowdown allowed: %dx)", small, big, raceSlowdown)
	if big > 5*time.Millisecond*raceSlowdown {
		t.Errorf("12,000 fields took %v, want under 5 ms", big)
	}
	// Linear: fifty times the fields, about fifty times the time
	// (quadratic would be 2,500); the bound leaves room for a loaded
	// machine and the caches.
	if big > 500*small {
		t.Errorf("fifty times the fields took %.0f times as long: not linear", float64(big)/float64(small))
	}
}

func cpuTime(t *testing.T) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		t.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func TestTheTwelveThousandFieldRequestIsRefused431ForUnderFiveMillisecondsOfCPU(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	seen := make(chan string, 1)
	apply(t, p, routeTo(smuggleHost, "shop", parsedApp(t, seen), route.Up))
	const n = 20
	req := manyFields(12000)
	before := cpuTime(t)
	for range n {
		if status, body := exchange(t, addr, req); status != 431 {
			t.Fatalf("got %d %q, want 431", status, body)
		}
	}
	// The whole test process: the proxy and the client writing 48 KB.
	per := (cpuTime(t) - before) / n
	t.Logf("CPU per 12,000-field request, client included: %v", per)
	if per > 5*time.Millisecond*raceSlowdown {
		t.Errorf("each request cost %v of CPU, want under 5 ms", per)
	}
}
