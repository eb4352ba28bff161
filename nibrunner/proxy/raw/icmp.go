package raw

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
)

// A UDP flow whose app could not be woken is refused the way a port
// nothing listens on is: with an ICMP port unreachable (ICMPv6 for IPv6),
// which a client's connected socket reports as "connection refused". A
// TCP connection is reset in the same case; a stopped app's ports are not
// bound at all, so there the kernel answers itself.

// quotedPayload is how much of the refused datagram's payload the
// message quotes after its IP and UDP headers (RFC 792 asks for the
// first 8 bytes of the datagram, which is the UDP header; more helps a
// client tell its datagrams apart).
const quotedPayload = 64

// portUnreachable is the ICMP message (type, code, checksum onwards)
// that refuses datagram, sent from client to local. For IPv6 the
// checksum is left to the kernel, which computes it for ICMPv6 sockets.
func portUnreachable(client, local netip.AddrPort, datagram []byte) []byte {
	quoted := datagram[:min(len(datagram), quotedPayload)]
	udpLen := 8 + len(datagram)
	var m []byte
	if client.Addr().Is4() {
		m = make([]byte, 8, 8+20+8+len(quoted))
		m[0], m[1] = 3, 3 // destination unreachable: port unreachable
		ip := make([]byte, 20)
		ip[0] = 0x45 // IPv4, a 20-byte header
		binary.BigEndian.PutUint16(ip[2:], uint16(min(20+udpLen, 0xffff)))
		ip[8], ip[9] = 64, syscall.IPPROTO_UDP
		s, d := client.Addr().As4(), local.Addr().As4()
		copy(ip[12:], s[:])
		copy(ip[16:], d[:])
		binary.BigEndian.PutUint16(ip[10:], checksum(ip))
		m = append(m, ip...)
	} else {
		m = make([]byte, 8, 8+40+8+len(quoted))
		m[0], m[1] = 1, 4 // destination unreachable: port unreachable
		ip := make([]byte, 40)
		ip[0] = 0x60 // IPv6
		binary.BigEndian.PutUint16(ip[4:], uint16(min(udpLen, 0xffff)))
		ip[6], ip[7] = syscall.IPPROTO_UDP, 64
		s, d := client.Addr().As16(), local.Addr().As16()
		copy(ip[8:], s[:])
		copy(ip[24:], d[:])
		m = append(m, ip...)
	}
	udp := make([]byte, 8) // the checksum stays 0: nobody checks a quoted one
	binary.BigEndian.PutUint16(udp[0:], client.Port())
	binary.BigEndian.PutUint16(udp[2:], local.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(min(udpLen, 0xffff)))
	m = append(append(m, udp...), quoted...)
	if client.Addr().Is4() {
		binary.BigEndian.PutUint16(m[2:], checksum(m))
	}
	return m
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// sendPortUnreachable refuses datagram, which client sent to local, with
// an ICMP port unreachable from local. It needs CAP_NET_RAW (nibrunnerd
// runs as root).
func sendPortUnreachable(client, local netip.AddrPort, datagram []byte) error {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	family, proto := syscall.AF_INET, syscall.IPPROTO_ICMP
	if !client.Addr().Is4() {
		family, proto = syscall.AF_INET6, syscall.IPPROTO_ICMPV6
	}
	if !local.Addr().IsValid() || local.Addr().IsUnspecified() {
		// The client's kernel matches a refusal to its socket by the
		// address it sent to, quoted; a wildcard one matches nothing.
		return fmt.Errorf("refuse %v: the address it sent to is not known, only %v (on a wildcard socket its datagram must carry IP_PKTINFO or IPV6_PKTINFO)", client, local)
	}
	if client.Addr().Is4() != local.Addr().Is4() {
		return fmt.Errorf("refuse %v → %v: the two addresses are of different families", client, local)
	}
	fd, err := syscall.Socket(family, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, proto)
	if err != nil {
		return fmt.Errorf("open a raw ICMP socket to refuse %v (needs CAP_NET_RAW): %w", client, err)
	}
	defer syscall.Close(fd)
	var from, to syscall.Sockaddr
	if client.Addr().Is4() {
		from = &syscall.SockaddrInet4{Addr: local.Addr().As4()}
		to = &syscall.SockaddrInet4{Addr: client.Addr().As4()}
	} else {
		from = &syscall.SockaddrInet6{Addr: local.Addr().As16()}
		to = &syscall.SockaddrInet6{Addr: client.Addr().As16()}
	}
	if err := syscall.Bind(fd, from); err != nil {
		return fmt.Errorf("bind a raw ICMP socket to %v to refuse %v: %w", local.Addr(), client, err)
	}
	if err := syscall.Sendto(fd, portUnreachable(client, local, datagram), 0, to); err != nil {
		return fmt.Errorf("send port unreachable to %v: %w", client, err)
	}
	return nil
}
