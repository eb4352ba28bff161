package main

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"
)

func TestTCPGetsTheBannerThenItsBytesBackAndUDPItsDatagrams(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	ul, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go serveTCP(tl)
	go serveUDP(ul)

	c, err := net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprint(c, "hello\n")
	for _, want := range []string{"echo\n", "hello\n"} {
		if got, err := br.ReadString('\n'); got != want || err != nil {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}

	u, err := net.Dial("udp", ul.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	u.SetDeadline(time.Now().Add(5 * time.Second))
	u.Write([]byte("datagram"))
	buf := make([]byte, 64)
	if n, err := u.Read(buf); string(buf[:n]) != "datagram" || err != nil {
		t.Fatalf("got %q, %v", buf[:n], err)
	}
}
