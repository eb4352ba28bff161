package raw

import (
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

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

// BenchmarkUDPAnswerFromTheAddressSentTo is one datagram's round trip
// between a client on 127.0.0.1 and a socket on 0.0.0.0 that reads its
// destination (IP_PKTINFO) and answers through a flow's reply: sent plain
// (sendto, the source left to routing, as before) and from the address
// the client sent to (sendmsg with an IP_PKTINFO message). The two
// alternate datagram by datagram, so a machine whose load moves moves both
// alike; each is timed on its own and reported as its mean and median
// (sendto-ns/op, pktinfo-ns/op and their -p50).
func BenchmarkUDPAnswerFromTheAddressSentTo(b *testing.B) {
	ul, err := net.ListenPacket("udp", "0.0.0.0:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ul.Close()
	srv := ul.(*net.UDPConn)
	if err := recvDestination(srv); err != nil {
		b.Fatal(err)
	}
	c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.LocalAddr().(*net.UDPAddr).Port)))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Minute))
	msg, buf, oob := make([]byte, 512), make([]byte, 1500), make([]byte, oobSpace)
	// The flow's control message, from a first datagram as the relay reads it.
	if _, err := c.Write(msg); err != nil {
		b.Fatal(err)
	}
	_, oobn, _, _, err := srv.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		b.Fatal(err)
	}
	from := replySource(oob[:oobn])
	if from == nil {
		b.Fatal("the first datagram carried no IP_PKTINFO")
	}
	pt, client := &port{udp: srv}, c.LocalAddr().(*net.UDPAddr).AddrPort()
	arms := [2]*flow{{pt: pt, client: client}, {pt: pt, client: client, from: from}}
	var took [2][]time.Duration
	b.SetBytes(int64(len(msg)))
	i := 0
	for b.Loop() {
		f := arms[i%2]
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		n, _, _, _, err := srv.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			b.Fatal(err)
		}
		f.reply(buf[:n])
		if _, err := c.Read(buf); err != nil {
			b.Fatal(err)
		}
		took[i%2] = append(took[i%2], time.Since(start))
		i++
	}
	for a, name := range []string{"sendto", "pktinfo"} {
		d := took[a]
		if len(d) == 0 {
			continue
		}
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		slices.Sort(d)
		b.ReportMetric(float64(sum)/float64(len(d)), name+"-ns/op")
		b.ReportMetric(float64(d[len(d)/2]), name+"-p50-ns/op")
	}
}
