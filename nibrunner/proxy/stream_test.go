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

func TestAnUpgradedStreamIsCarriedAndCountsAsBusyWhileOpen(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	apply(t, p, routeTo("chat.example.com", "chat", echoUpgrade(t), route.Up))

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: chat.example.com\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("got %d %q, want 101", resp.StatusCode, b)
	}
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
