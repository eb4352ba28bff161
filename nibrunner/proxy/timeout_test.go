package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

// silentApp is an app that reads requests and never answers them (until
// the test ends).
func silentApp(t *testing.T) int {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-done
	}))
}

// streamingApp sends its head and a first line at once, and a second
// line when more is closed.
func streamingApp(t *testing.T, more <-chan struct{}) int {
	return httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "first\n")
		http.NewResponseController(w).Flush()
		<-more
		io.WriteString(w, "second\n")
	}))
}

func TestAnAppThatBeginsNoAnswerInTimeIsAnswered504(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, "slow.example.com")
	p := New(Options{Logf: t.Logf, ResponseHeaderTimeout: 200 * time.Millisecond})
	plain := "http://" + serve(t, p, ListenConfig{})
	tlsAddr := serve(t, p, ListenConfig{CertFile: certFile, KeyFile: keyFile})
	apply(t, p, routeTo("slow.example.com", "slow", silentApp(t), route.Up))
	want := "This app did not begin its answer within 200ms.\n"

	start := time.Now()
	must(t, get(t, &http.Client{}, plain, "slow.example.com"), http.StatusGatewayTimeout, want)
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("504 after %v, before the 200ms timeout", waited)
	}
	// HTTP/2 goes through net/http's transport, with the same timeout and answer.
	c := tlsClient(tlsAddr, "slow.example.com", pool)
	defer c.CloseIdleConnections()
	r := get(t, c, "https://slow.example.com", "slow.example.com")
	if r.proto != "HTTP/2.0" {
		t.Fatalf("asked over %s, want HTTP/2.0", r.proto)
	}
	must(t, r, http.StatusGatewayTimeout, want)
}

func TestOnlyTheHeadIsTimedAStreamAndAnUpgradeGoOnPastTheTimeout(t *testing.T) {
	more := make(chan struct{})
	p := New(Options{Logf: t.Logf, ResponseHeaderTimeout: 300 * time.Millisecond})
	addr := serve(t, p, ListenConfig{})
	apply(t, p,
		routeTo("events.example.com", "events", streamingApp(t, more), route.Up),
		routeTo("chat.example.com", "chat", echoUpgrade(t), route.Up),
		routeTo("slow.example.com", "slow", silentApp(t), route.Up))
	// timeoutPassed returns once a request begun now has been timed out:
	// by then any deadline set for an answer that began earlier has passed.
	timeoutPassed := func() {
		t.Helper()
		must(t, get(t, &http.Client{}, "http://"+addr, "slow.example.com"), http.StatusGatewayTimeout,
			"This app did not begin its answer within 300ms.\n")
	}

	stream, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	fmt.Fprint(stream, "GET /events HTTP/1.1\r\nHost: events.example.com\r\n\r\n")
	sr := bufio.NewReader(stream)
	resp, err := http.ReadResponse(sr, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := bufio.NewReader(resp.Body)
	if line, err := body.ReadString('\n'); resp.StatusCode != 200 || line != "first\n" || err != nil {
		t.Fatalf("the stream began %d %q %v", resp.StatusCode, line, err)
	}

	chat, cr := dialUpgrade(t, addr, "chat.example.com")

	timeoutPassed()

	close(more)
	if rest, err := io.ReadAll(body); string(rest) != "second\n" || err != nil {
		t.Fatalf("the stream went on with %q, %v", rest, err)
	}
	fmt.Fprint(chat, "still there?\n")
	if line, err := cr.ReadString('\n'); line != "still there?\n" || err != nil {
		t.Fatalf("the upgraded stream echoed %q, %v", line, err)
	}
}
