package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"alpnib.dev/nibrunner/route"
)

// echoUpgrade is an app that switches protocols and echoes lines back.
func echoUpgrade(t *testing.T) int {
	return httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade to echo", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString(line)
			rw.Flush()
		}
	}))
}

// dialUpgrade asks the proxy at addr to upgrade a connection to host's
// echo protocol, and returns it once the answer is 101.
func dialUpgrade(t *testing.T, addr, host string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", host)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("got %d %q, want 101", resp.StatusCode, b)
	}
	return conn, br
}

func TestAnUpgradedStreamIsCarriedAndCountsAsBusyWhileOpen(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	apply(t, p, routeTo("chat.example.com", "chat", echoUpgrade(t), route.Up))

	conn, br := dialUpgrade(t, addr, "chat.example.com")
	fmt.Fprint(conn, "hello\n")
	if line, err := br.ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("echo %q, %v", line, err)
	}
	if _, busy := p.Activity("chat"); !busy {
		t.Fatal("an open stream is not busy")
	}
	conn.Close()
	waitFor(t, "the stream closes", func() bool { _, busy := p.Activity("chat"); return !busy })
}
