package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

// smuggle is one request of the smuggling corpus: what a client sends,
// and either the status the proxy refuses it with (the app sees
// nothing) or the one request the app must see.
type smuggle struct {
	name    string
	request string
	refused int    // the proxy's status; 0 when it forwards
	want    string // what the app parsed: "METHOD URI host=HOST body=BODY"
}

const smuggleHost = "shop.example.com"

// smugglingCorpus is every technique of issue 28 and its neighbours,
// against RFC 9112 and what nginx refuses.
var smugglingCorpus = []smuggle{
	{"long s in Transfer-Encoding (U+017F)",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 34\r\nTran\u017ffer-Encoding: chunked\r\n\r\n" +
			"5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n", 400, ""},
	{"Kelvin sign in chunked (U+212A)",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chun\u212aed\r\n\r\n" +
			"5\r\nhello\r\n0\r\n\r\n", 501, ""},
	{"bare CR in a value",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nX-A: one\rGET /smuggled HTTP/1.1\r\n\r\n", 400, ""},
	{"bare CR in a name",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nX\rA: one\r\n\r\n", 400, ""},
	{"NUL in a value",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nX-A: one\x00two\r\n\r\n", 400, ""},
	{"a control byte in a value",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nX-A: one\x0btwo\r\n\r\n", 400, ""},
	{"obs-fold",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nX-A: one\r\n two\r\n\r\n", 400, ""},
	{"obs-fold of Transfer-Encoding",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 15\r\nTransfer-Encoding:\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"space before the colon",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 15\r\nTransfer-Encoding : chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"Content-Length and Transfer-Encoding",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: shop.example.com\r\n\r\n", 400, ""},
	{"Transfer-Encoding and Content-Length",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: shop.example.com\r\n\r\n", 400, ""},
	{"two Content-Lengths that differ",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 5\r\nContent-Length: 30\r\n\r\nhelloGET /smuggled HTTP/1.1\r\n\r\n", 400, ""},
	{"a Content-Length list",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 5, 30\r\n\r\nhello", 400, ""},
	{"a signed Content-Length",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: +5\r\n\r\nhello", 400, ""},
	{"Transfer-Encoding in HTTP/1.0",
		"POST /a HTTP/1.0\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"two Transfer-Encoding fields",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 501, ""},
	{"a coding before chunked",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 501, ""},
	{"Connection drops Content-Length",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello", 0,
		"POST /a host=shop.example.com body=hello"},
	{"a chunk size in 0x",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"a negative chunk size",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"a chunk size of 17 hex digits",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"a chunk line ended by a bare LF",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 400, ""},
	{"a bare CR in a chunk extension",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\rc\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"a chunk extension that is not a token",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n5;@\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"chunk data longer than its size",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", 400, ""},
	{"a trailer that is not a field",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nGET /smuggled HTTP/1.1\r\n\r\n", 400, ""},
	{"a folded trailer",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n", 400, ""},
	{"two Host fields",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nHost: evil.attacker.test\r\n\r\n", 400, ""},
	{"a Host with a path",
		"GET /a HTTP/1.1\r\nHost: shop.example.com/x\r\n\r\n", 400, ""},
	{"an absolute target with userinfo",
		"GET http://evil@shop.example.com/a HTTP/1.1\r\nHost: shop.example.com\r\n\r\n", 400, ""},
	{"a space inside the target",
		"GET /a HTTP/1.1 HTTP/1.1\r\nHost: shop.example.com\r\n\r\n", 400, ""},
	{"two spaces after the method",
		"GET  /a HTTP/1.1\r\nHost: shop.example.com\r\n\r\n", 400, ""},
	{"a target that is not a path",
		"GET a HTTP/1.1\r\nHost: shop.example.com\r\n\r\n", 400, ""},
	{"too many fields",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\n" + strings.Repeat("a:\r\n", 12000) + "Connection: x\r\n\r\n", 431, ""},

	// What is forwarded, exactly once.
	{"an absolute target replaces Host",
		"GET http://shop.example.com/a?b HTTP/1.1\r\nHost: evil.attacker.test\r\n\r\n", 0,
		"GET /a?b host=shop.example.com body="},
	{"chunked, in capitals",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nTransfer-Encoding: CHUNKED\r\n\r\n5;ext=\"q\\\"v\"\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n", 0,
		"POST /a host=shop.example.com body=hello"},
	{"two equal Content-Lengths",
		"POST /a HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 0,
		"POST /a host=shop.example.com body=hello"},
	{"obs-text in a value",
		"GET /a HTTP/1.1\r\nHost: shop.example.com\r\nX-A: caf\xc3\xa9\r\n\r\n", 0,
		"GET /a host=shop.example.com body="},
	{"lines ended by bare LF",
		"GET /a HTTP/1.1\nHost: shop.example.com\nX-A: b\n\n", 0,
		"GET /a host=shop.example.com body="},
}

// parsedApp is an app behind the proxy that answers each request with
// what it parsed of it, and sends that on seen too.
func parsedApp(t testing.TB, seen chan<- string) int {
	return httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got := fmt.Sprintf("%s %s host=%s body=%s", r.Method, r.RequestURI, r.Host, b)
		seen <- got
		io.WriteString(w, got)
	}))
}

// exchange sends request on a new connection and reads one answer.
func exchange(t testing.TB, addr, request string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(c, request) // the proxy may answer before reading it all
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNoSmugglingTechniqueLeaksAnAnswerToTheNextClient sends each
// request of the corpus over the proxy's one pooled connection to the
// app, then another client's request: the app parses exactly the request
// the proxy accepted (or none), and the next client gets its own answer.
func TestNoSmugglingTechniqueLeaksAnAnswerToTheNextClient(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	seen := make(chan string, 16)
	apply(t, p, routeTo(smuggleHost, "shop", parsedApp(t, seen), route.Up))
	next := "GET /next HTTP/1.1\r\nHost: shop.example.com\r\n\r\n"
	if status, _ := exchange(t, addr, next); status != 200 {
		t.Fatalf("warm-up: %d", status)
	}
	<-seen
	pooled := func() bool { return p.pools.idleCount() == 1 }
	for _, c := range smugglingCorpus {
		t.Run(c.name, func(t *testing.T) {
			// The connection goes back to the pool just after its answer
			// is sent.
			waitFor(t, "the one app connection to be pooled", pooled)
			status, body := exchange(t, addr, c.request)
			switch {
			case c.refused != 0 && status != c.refused:
				t.Fatalf("got %d %q, want it refused %d", status, body, c.refused)
			case c.refused != 0 && (!strings.HasSuffix(body, ".\n") || len(body) < 20):
				t.Fatalf("refused %d without a sentence: %q", status, body)
			case c.refused == 0 && (status != 200 || body != c.want):
				t.Fatalf("got %d %q, want 200 %q", status, body, c.want)
			}
			if c.refused == 0 {
				if got := <-seen; got != c.want {
					t.Fatalf("the app parsed %q, want %q", got, c.want)
				}
				// The next client must find the same connection pooled.
				waitFor(t, "the app connection to be pooled again", pooled)
			}
			status, body = exchange(t, addr, next)
			if want := "GET /next host=shop.example.com body="; status != 200 || body != want {
				t.Fatalf("the next client got %d %q, want its own answer %q", status, body, want)
			}
			if got := <-seen; got != "GET /next host=shop.example.com body=" {
				t.Fatalf("the app parsed %q for the next client", got)
			}
			select {
			case got := <-seen:
				t.Fatalf("the app parsed a request nobody sent: %q", got)
			default:
			}
		})
	}
}

// TestAConnectionWithBytesPastItsAnswerIsNotPooled: an app that sends
// more than its answer (a second answer, say) has its connection closed,
// so the next client never reads those bytes as its own answer, whether
// they came with the answer or after it.
func TestAConnectionWithBytesPastItsAnswerIsNotPooled(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			p := newProxy(t, &fakeWaker{})
			addr := serve(t, p, ListenConfig{})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			// send tells the app to send its extra answer, and sent says it
			// did: two channels, so that neither side takes its own signal.
			send, sent := make(chan struct{}, 4), make(chan struct{}, 4)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						r := bufio.NewReader(c)
						for {
							req, err := http.ReadRequest(r)
							if err != nil {
								return
							}
							answer := "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(req.URL.Path)) + "\r\n\r\n" + req.URL.Path
							leak := "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n/stale"
							if late {
								io.WriteString(c, answer)
								<-send
								io.WriteString(c, leak)
								sent <- struct{}{}
							} else {
								io.WriteString(c, answer+leak)
							}
						}
					}()
				}
			}()
			apply(t, p, routeTo(smuggleHost, "shop", l.Addr().(*net.TCPAddr).Port, route.Up))
			if status, body := exchange(t, addr, "GET /first HTTP/1.1\r\nHost: shop.example.com\r\n\r\n"); status != 200 || body != "/first" {
				t.Fatalf("first: %d %q", status, body)
			}
			if late {
				send <- struct{}{} // the app sends its extra answer now
				<-sent
				// The extra bytes are on the idle connection's socket: the
				// next request finds them there and dials anew.
				waitFor(t, "the extra answer to reach the proxy's socket", func() bool { return pendingBytes(t, p) })
			}
			if status, body := exchange(t, addr, "GET /second HTTP/1.1\r\nHost: shop.example.com\r\n\r\n"); status != 200 || body != "/second" {
				t.Fatalf("the next client got %d %q, want its own answer", status, body)
			}
		})
	}
}

// pendingBytes reports whether p's one idle connection has bytes to read.
func pendingBytes(t *testing.T, p *Proxy) bool {
	p.pools.mu.Lock()
	defer p.pools.mu.Unlock()
	for _, bp := range p.pools.byAddr {
		bp.mu.Lock()
		defer bp.mu.Unlock()
		for _, c := range bp.idle {
			return !c.quiet()
		}
	}
	return false
}
