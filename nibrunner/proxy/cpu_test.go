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

// TestTwelveThousandFieldsCostLinearTime checks the growth, not a time: fifty
// times the fields cost about fifty times as much (quadratic would be 2,500
// times); the bound leaves room for a loaded machine and the caches. What one
// such request costs is BenchmarkTwelveThousandFieldRequest's to say.
func TestTwelveThousandFieldsCostLinearTime(t *testing.T) {
	small, big := headCost(t, manyFields(240)), headCost(t, manyFields(12000))
	t.Logf("240 fields: %v; 12,000 fields: %v", small, big)
	if big > 500*small {
		t.Errorf("fifty times the fields took %.0f times as long: not linear", float64(big)/float64(small))
	}
}

func cpuTime(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func TestTheTwelveThousandFieldRequestIsRefused431(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	seen := make(chan string, 1)
	apply(t, p, routeTo(smuggleHost, "shop", parsedApp(t, seen), route.Up))
	if status, body := exchange(t, addr, manyFields(12000)); status != 431 {
		t.Fatalf("got %d %q, want 431", status, body)
	}
	select {
	case got := <-seen:
		t.Fatalf("the app was sent %q", got)
	default:
	}
}

// BenchmarkTwelveThousandFieldRequest is issue 28's CPU attack end to end:
// the CPU the whole process spends (proxy and the client writing 48 KB) per
// 12,000-field request refused with 431, as cpu-ns/op beside the wall time.
func BenchmarkTwelveThousandFieldRequest(b *testing.B) {
	p := newProxy(b, &fakeWaker{})
	addr := serve(b, p, ListenConfig{})
	seen := make(chan string, 1)
	apply(b, p, routeTo(smuggleHost, "shop", parsedApp(b, seen), route.Up))
	req := manyFields(12000)
	before := cpuTime(b)
	for b.Loop() {
		if status, body := exchange(b, addr, req); status != 431 {
			b.Fatalf("got %d %q, want 431", status, body)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}
