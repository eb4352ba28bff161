package raw

import (
	"io"
	"net"
	"testing"

	"alpnib.dev/nibrunner/route"
)

// BenchmarkRawTCPThroughput streams bytes one way over one connection to
// a guest that discards them (both on loopback): through the relay, and
// straight to the guest for comparison. Run the two side by side.
func BenchmarkRawTCPThroughput(b *testing.B) {
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	r := New(Options{ListenAddress: "127.0.0.1", Logf: b.Logf})
	defer r.Close()
	hp := freePort(b)
	if err := r.ApplyPorts(b.Context(), []route.Port{{AppID: "bench", Index: 1, HostPort: hp, Addr: sink.Addr().String(), State: route.Up}}); err != nil {
		b.Fatal(err)
	}
	relay := r.Addrs()[hp].String()
	chunk := make([]byte, 256<<10)
	for _, bc := range []struct{ name, addr string }{{"relay", relay}, {"direct", sink.Addr().String()}} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := net.Dial("tcp", bc.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				if _, err := c.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
