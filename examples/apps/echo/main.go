// Command echo is a tenant for raw ports: it echoes whatever arrives on
// $ECHO_PORT, over TCP (each connection's bytes back to it) and over UDP
// (each datagram back to its sender), and answers HTTP health checks on
// $PORT (the instance's httpPort, set by the guest init).
//
//	GET /healthz          ok
//	GET /resolve?name=N   N's addresses, looked up through the guest's
//	                      resolv.conf (the host's [network] dns_servers)
//
// Its first TCP bytes are a banner, "echo\n", so a client can tell the
// guest answered from a relay that only accepted.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
)

func main() {
	echoPort := os.Getenv("ECHO_PORT")
	if echoPort == "" {
		echoPort = "7000"
	}
	httpPort := os.Getenv("PORT")
	if httpPort == "" {
		httpPort = "8080"
	}
	tl, err := net.Listen("tcp", ":"+echoPort)
	if err != nil {
		log.Fatal(err)
	}
	ul, err := net.ListenPacket("udp", ":"+echoPort)
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(serveTCP(tl)) }()
	go func() { log.Fatal(serveUDP(ul)) }()
	fmt.Printf("echo on tcp and udp port %s, health on %s\n", echoPort, httpPort)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	http.HandleFunc("/resolve", resolve)
	log.Fatal(http.ListenAndServe(":"+httpPort, nil))
}

// serveTCP echoes every connection l accepts until l fails.
func serveTCP(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			if _, err := io.WriteString(c, "echo\n"); err != nil {
				return
			}
			_, _ = io.Copy(c, c)
		}()
	}
}

// serveUDP sends every datagram back to its sender until c fails.
func serveUDP(c net.PacketConn) error {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return err
		}
		_, _ = c.WriteTo(buf[:n], from)
	}
}

// resolve answers the addresses of the name asked for, one a line.
func resolve(w http.ResponseWriter, r *http.Request) {
	addrs, err := net.DefaultResolver.LookupHost(r.Context(), r.URL.Query().Get("name"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, a := range addrs {
		fmt.Fprintln(w, a)
	}
}
