package raw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/route"
)

// flow is one UDP client of a port. What it sends goes to the guest over
// a connected socket of the flow's own, so the guest's answers come back
// to the flow and leave from the port's address, as the client expects.
type flow struct {
	pt     *port
	client netip.AddrPort
	local  netip.AddrPort // where the client sent its first datagram
	// from is the control message the guest's answers are sent with (on a
	// wildcard socket): it makes them leave from local, not from
	// whichever address the route to the client prefers. nil: send plain.
	from []byte
	app  string
	last atomic.Int64 // unix nanoseconds of the last datagram either way

	mu      sync.Mutex
	guest   *net.UDPConn // nil until the app is ready
	queue   [][]byte
	qbytes  int
	qcost   int // what the queue counts against its port's budget
	ended   bool
	in, out int64
}

// readUDP takes the port's datagrams until it is closed. On a wildcard
// address it reads each with its packet-info control message, which
// says where the client sent it; on any other the socket's own address
// says that, and datagrams are read without.
func (pt *port) readUDP() {
	r := pt.r
	defer r.wg.Done()
	var oob []byte
	if pt.udp.LocalAddr().(*net.UDPAddr).IP.IsUnspecified() {
		if err := recvDestination(pt.udp); err != nil {
			r.opts.Logf("nibrunnerd: raw relay: udp port %v: %v; a flow refused on this wildcard address gets no port unreachable", pt.udp.LocalAddr(), err)
		} else {
			oob = make([]byte, oobSpace)
		}
	}
	buf := make([]byte, 64<<10)
	for {
		var n, oobn int
		var from netip.AddrPort
		var err error
		if oob != nil {
			n, oobn, _, from, err = pt.udp.ReadMsgUDPAddrPort(buf, oob)
		} else {
			n, from, err = pt.udp.ReadFromUDPAddrPort(buf)
		}
		if err != nil {
			if pt.closing() {
				return
			}
			continue // an ICMP error for an earlier send, say
		}
		p := pt.route()
		r.meters.Of(p.AppID).Touch(r.opts.Now())
		pt.flowFor(from, p.AppID, oob[:oobn]).send(buf[:n])
	}
}

// flowFor is the flow of client, begun on its first datagram, whose
// control messages (oob) say which address it was sent to; they are
// read only then.
func (pt *port) flowFor(client netip.AddrPort, app string, oob []byte) *flow {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if f := pt.flows[client]; f != nil {
		return f
	}
	f := &flow{pt: pt, client: client, app: app}
	ip := client.Addr().Unmap()
	// Too many flows at once, on the port or from this client's address:
	// this one's datagrams are dropped, as a full conntrack table would.
	switch {
	case len(pt.flows) >= pt.r.opts.MaxFlows:
		f.ended = true
		pt.r.limit(limitUDPFlows, 1)
		return f
	case pt.byClient[ip] >= pt.r.opts.MaxFlowsPerClient:
		f.ended = true
		pt.r.limit(limitUDPClientFlows, 1)
		return f
	}
	pt.byClient[ip]++
	f.local = pt.destination(oob)
	f.from = replySource(oob)
	pt.flows[client] = f
	f.touch()
	if rec := pt.r.opts.Recorder; rec != nil {
		rec.RawOpen(app, "udp", 1)
	}
	pt.r.wg.Add(1)
	go f.run()
	return f
}

// oobSpace holds the one packet-info control message a datagram
// carries (IPv6's is the larger).
var oobSpace = unix.CmsgSpace(unix.SizeofInet6Pktinfo)

// recvDestination asks the kernel to say, with each datagram c reads,
// which address it was sent to (IP_PKTINFO, IPV6_RECVPKTINFO). On a
// socket bound to a wildcard address that is the only way to learn it,
// and a port unreachable must quote it: the client's kernel matches the
// refusal to its socket by the address that socket sent to. An IPv6
// socket asks only for IPV6_PKTINFO: on a dual-stack one Linux gives an
// IPv4 datagram that too, its address mapped (and IP_PKTINFO besides,
// if asked, which would be a second message per datagram for nothing).
func recvDestination(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("ask for each datagram's destination address: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		domain, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			serr = fmt.Errorf("read the socket's family (SO_DOMAIN): %w", err)
			return
		}
		if domain == unix.AF_INET6 {
			if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); err != nil {
				serr = fmt.Errorf("set IPV6_RECVPKTINFO: %w", err)
			}
			return
		}
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1); err != nil {
			serr = fmt.Errorf("set IP_PKTINFO: %w", err)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("ask for each datagram's destination address: %w", err)
	}
	return nil
}

// destination is the address and port a datagram was sent to: the
// address from its packet-info control message (oob), unmapped, else
// the socket's own (which on a wildcard socket is unspecified).
func (pt *port) destination(oob []byte) netip.AddrPort {
	bound := pt.udp.LocalAddr().(*net.UDPAddr).AddrPort()
	if pi, ok := parsePktinfo(oob); ok {
		return netip.AddrPortFrom(pi.dst.Unmap(), bound.Port())
	}
	return netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port())
}

// pktinfo is what a datagram's packet-info control message says: the
// address it was sent to (ipi_addr, ipi6_addr, as received: mapped on a
// dual-stack socket), and for IPv4 the local address the kernel would
// answer from (ipi_spec_dst; a broadcast's is the interface's), for IPv6
// the interface it came in on.
type pktinfo struct {
	dst     netip.Addr
	specDst [4]byte // IPv4 only
	ifindex uint32  // IPv6 only
}

// parsePktinfo reads the IP_PKTINFO or IPV6_PKTINFO message in oob.
func parsePktinfo(oob []byte) (pktinfo, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return pktinfo{}, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_PKTINFO && len(m.Data) >= unix.SizeofInet4Pktinfo:
			// struct in_pktinfo: ipi_ifindex, ipi_spec_dst, ipi_addr.
			return pktinfo{dst: netip.AddrFrom4([4]byte(m.Data[8:12])), specDst: [4]byte(m.Data[4:8])}, true
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_PKTINFO && len(m.Data) >= unix.SizeofInet6Pktinfo:
			// struct in6_pktinfo: ipi6_addr, ipi6_ifindex.
			return pktinfo{dst: netip.AddrFrom16([16]byte(m.Data[0:16])), ifindex: binary.NativeEndian.Uint32(m.Data[16:20])}, true
		}
	}
	return pktinfo{}, false
}

// replySource is the control message that sends a flow's answers from
// the address its client sent to, given the packet-info message of its
// first datagram (oob): IP_PKTINFO with that datagram's local address as
// ipi_spec_dst, or IPV6_PKTINFO with its destination (mapped, on a
// dual-stack socket, which Linux then sends as IPv4 from it) and, for a
// link-local one, the interface it came in on, whose zone the address is
// of. nil when oob has neither, or the datagram was sent to a multicast
// group, which is no source; those answers leave as routing picks.
//
// On a socket bound to a wildcard address the kernel otherwise picks the
// source by the route back to the client, and on a host with several
// addresses that can be another one than the client sent to: the
// client's connected socket then drops the answer.
func replySource(oob []byte) []byte {
	pi, ok := parsePktinfo(oob)
	switch {
	case !ok:
		return nil
	case pi.dst.Is4():
		// Sent, ipi_spec_dst is the source; the interface is left to
		// routing.
		return unix.PktInfo4(&unix.Inet4Pktinfo{Spec_dst: pi.specDst})
	case pi.dst.Unmap().IsMulticast():
		return nil
	}
	info := unix.Inet6Pktinfo{Addr: pi.dst.As16()}
	if !pi.dst.Is4In6() && pi.dst.IsLinkLocalUnicast() {
		info.Ifindex = pi.ifindex
	}
	return unix.PktInfo6(&info)
}

// reply sends one of the guest's answers to the flow's client, from the
// address the client sent to when the socket is a wildcard one.
func (f *flow) reply(b []byte) {
	if f.from != nil {
		_, _, _ = f.pt.udp.WriteMsgUDPAddrPort(b, f.from, f.client)
		return
	}
	_, _ = f.pt.udp.WriteToUDPAddrPort(b, f.client)
}

func (f *flow) touch() { f.last.Store(f.pt.r.opts.Now().UnixNano()) }

// send passes one datagram on, or queues it while the app wakes: at most
// QueueDatagrams and QueueBytes, and the rest is dropped.
func (f *flow) send(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		f.dropped(1)
		return
	}
	f.touch()
	f.in += int64(len(b))
	if f.guest != nil {
		_, _ = f.guest.Write(b)
		return
	}
	o := f.pt.r.opts
	if len(f.queue) >= o.QueueDatagrams || f.qbytes+len(b) > o.QueueBytes {
		f.dropped(1)
		return
	}
	cost := max(len(b), datagramOverhead)
	if !f.pt.reserve(cost) {
		f.dropped(1)
		f.pt.r.limit(limitUDPPortBudget, 1)
		return
	}
	f.queue = append(f.queue, append([]byte(nil), b...))
	f.qbytes += len(b)
	f.qcost += cost
}

// datagramOverhead is the least a queued datagram counts against its
// port's budget: its slice header and allocation, whatever its size.
const datagramOverhead = 64

// reserve takes n bytes of the port's queue budget, or says there are
// not that many left.
func (pt *port) reserve(n int) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.queued+n > pt.r.opts.PortQueueBytes {
		return false
	}
	pt.queued += n
	return true
}

// release gives n bytes back to the port's queue budget.
func (pt *port) release(n int) {
	if n == 0 {
		return
	}
	pt.mu.Lock()
	pt.queued -= n
	pt.mu.Unlock()
}

func (f *flow) dropped(n int) {
	if rec := f.pt.r.opts.Recorder; rec != nil {
		rec.RawDropped(f.app, n)
	}
}

// run waits for the app, delivers the queue in order, then carries the
// guest's answers back until the flow goes idle or its port closes.
func (f *flow) run() {
	pt, r := f.pt, f.pt.r
	defer r.wg.Done()
	outcome := "relayed"
	defer func() { f.end(outcome) }()
	p := pt.route()
	if err := r.ready(r.ctx, p, "udp"); err != nil {
		outcome = "refused"
		if r.ctx.Err() == nil { // not the relay closing
			f.refuse(p, err)
		}
		return
	}
	ga, err := net.ResolveUDPAddr("udp", pt.route().Addr)
	var g *net.UDPConn
	if err == nil {
		g, err = net.DialUDP("udp", nil, ga)
	}
	if err != nil {
		r.opts.Logf("nibrunnerd: raw relay: app %s port %d: %v", p.AppID, p.Index, err)
		outcome = "failed"
		return
	}
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		g.Close()
		return
	}
	for _, b := range f.queue {
		_, _ = g.Write(b)
	}
	pt.release(f.qcost)
	f.queue, f.qbytes, f.qcost, f.guest = nil, 0, 0, g
	f.mu.Unlock()

	buf := make([]byte, 64<<10)
	idle := r.opts.FlowIdle
	for {
		_ = g.SetReadDeadline(time.Now().Add(idle))
		n, err := g.Read(buf)
		if n > 0 {
			f.touch()
			f.mu.Lock()
			f.out += int64(n)
			f.mu.Unlock()
			f.reply(buf[:n])
			continue
		}
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			if since := time.Duration(r.opts.Now().UnixNano() - f.last.Load()); since < idle {
				idle = r.opts.FlowIdle - since
				continue
			}
			return
		case errors.Is(err, syscall.ECONNREFUSED):
			// The guest answered a datagram with port unreachable: it does
			// not listen on udp here. Later ones may still find it.
			continue
		case err != nil:
			return
		}
	}
}

// refuse answers a flow whose app could not be woken as a port nothing
// listens on would: the first datagram it queued gets an ICMP port
// unreachable, and the daemon's log says so with the app (the queue is
// counted as dropped when the flow ends).
func (f *flow) refuse(p route.Port, why error) {
	f.mu.Lock()
	n := len(f.queue)
	var first []byte
	if n > 0 {
		first = f.queue[0]
	}
	f.mu.Unlock()
	err := sendPortUnreachable(f.client, f.local, first)
	if err != nil {
		f.pt.r.opts.Logf("nibrunnerd: raw relay: app %s udp port %d: the wake failed (%v); %d datagrams from %v dropped, and no port unreachable could be sent: %v", p.AppID, p.HostPort, why, n, f.client, err)
		return
	}
	f.pt.r.opts.Logf("nibrunnerd: raw relay: app %s udp port %d: the wake failed (%v); %d datagrams from %v refused with port unreachable", p.AppID, p.HostPort, why, n, f.client)
}

// end forgets the flow and closes its socket (once).
func (f *flow) end(outcome ...string) {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	g, in, out := f.guest, f.in, f.out
	dropped, cost := len(f.queue), f.qcost
	f.queue, f.qcost = nil, 0
	f.mu.Unlock()
	f.pt.release(cost)
	if g != nil {
		g.Close()
	}
	pt := f.pt
	pt.mu.Lock()
	if pt.flows[f.client] == f {
		delete(pt.flows, f.client)
		ip := f.client.Addr().Unmap()
		if pt.byClient[ip]--; pt.byClient[ip] <= 0 {
			delete(pt.byClient, ip)
		}
	}
	pt.mu.Unlock()
	if rec := pt.r.opts.Recorder; rec != nil {
		o := "relayed"
		if len(outcome) > 0 {
			o = outcome[0]
		}
		if dropped > 0 {
			rec.RawDropped(f.app, dropped)
		}
		rec.RawConnection(f.app, "udp", o, in, out)
		rec.RawOpen(f.app, "udp", -1)
	}
}
