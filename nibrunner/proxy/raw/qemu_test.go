package raw

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/qemu"
)

// guestWaker wakes a real guest the way the daemon does: the VMM
// restores it, then the wake waits until its port answers (the health
// check's part).
type guestWaker struct {
	v     *qemu.VMM
	spec  vmm.Spec
	probe string
	calls atomic.Int64
}

func (w *guestWaker) Wake(ctx context.Context, app string) error {
	w.calls.Add(1)
	if _, err := w.v.Wake(ctx, w.spec); err != nil {
		return err
	}
	return w.answering(ctx)
}

// answering waits until the tenant answers on its echo port.
func (w *guestWaker) answering(ctx context.Context) error {
	for {
		c, err := net.DialTimeout("tcp", w.probe, time.Second)
		if err == nil {
			// The echo server's banner says the tenant itself answered.
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if line == "echo\n" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestARealGuestIsReachedOverRawTCPAndUDPAndWokenFromSleepByEach runs
// examples/apps/echo in a microVM (QEMU, TCG here) on its slot's tap, with
// the relay in front of its raw port: TCP and UDP reach the tenant, and
// after each of two sleeps, a TCP connection and then a UDP datagram wake
// it. The guest also resolves a name through the name server it was
// given, a tiny responder on the tap's host address. The tap is made in
// this process's network namespace, so the test needs the network guard
// (make test's), where that namespace is the test's own.
func TestARealGuestIsReachedOverRawTCPAndUDPAndWokenFromSleepByEach(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireNetGuard(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	ctx := context.Background()
	dir := daemontest.RunDir(t, "nbr") // QEMU's unix sockets need a short path
	img := daemontest.GuestImage(t)
	echo := filepath.Join(dir, "echo")
	if _, err := daemontest.Tenant("alpnib.dev/examples/apps/echo", echo); err != nil {
		t.Fatal(err)
	}
	volume := filepath.Join(dir, "vol.ext4")
	if out, err := exec.Command(testenv.RequireCommand(t, "mke2fs"), "-q", "-F", "-t", "ext4", volume, "32M").CombinedOutput(); err != nil {
		t.Fatalf("make the volume: %v\n%s", err, out)
	}
	v, err := qemu.New(ctx, qemu.Config{Image: img, RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })

	// A slot of its own in this namespace, and a name server on its tap.
	n := slottest.Free(t)
	if err := network.EnsureTap(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { network.RemoveTap(n) })
	hostIP, guestIP := network.HostAddr(n).Addr(), network.GuestAddr(n).Addr()
	answer := netip.MustParseAddr("192.0.2.77")
	serveDNS(t, netip.AddrPortFrom(hostIP, 53), "echo.test.", answer)

	// The VMM attaches images only: pack the program as the layer cache does.
	packed := filepath.Join(dir, "echo.squashfs")
	if err := layer.Pack(ctx, "", echo, "/app/echo", filepath.Join(dir, "stage"), packed); err != nil {
		t.Fatal(err)
	}
	const echoPort = 7000
	spec := vmm.Spec{
		AppID: "echo", DeploymentID: "echo-1", Slot: n, MemoryMiB: 128, VCPUs: 1,
		Layers:     []vmm.Layer{{Kind: vmm.LayerFilesystem, Digest: "test", Path: packed}},
		VolumePath: volume,
		Command:    vmm.Command{Program: "/app/echo", WorkingDirectory: "/data", Environment: map[string]string{"ECHO_PORT": strconv.Itoa(echoPort)}},
		HTTPPort:   8080,
		Ports:      []vmm.Port{{Name: "echo", GuestPort: echoPort, HostPort: slot.HostPort(n) + 1}},
		Restart:    vmm.RestartPolicy{MaxRestarts: 1, InitialBackoff: time.Second, MaxBackoff: time.Second, BackoffFactor: 1, ResetAfter: time.Minute},
		Network: vmm.Network{Tap: slot.Tap(n), HostIPv4: hostIP, GuestIPv4: guestIP, PrefixLen: 30,
			HostPort: slot.HostPort(n), DNS: []netip.Addr{hostIP}},
		Hostname: "echo.example.com",
	}
	guestAddr := netip.AddrPortFrom(guestIP, echoPort).String()
	w := &guestWaker{v: v, spec: spec, probe: guestAddr}
	t.Cleanup(func() { v.Stop(context.Background(), "echo") })
	sctx, scancel := context.WithTimeout(ctx, 3*time.Minute)
	defer scancel()
	if _, err := v.Start(sctx, spec); err != nil {
		t.Fatal(err)
	}
	// Up once the tenant answers, as a wake waits for.
	if err := w.answering(sctx); err != nil {
		t.Fatalf("the guest never answered on %s: %v\n%s", guestAddr, err, consoleOf(dir))
	}

	r := newRelay(t, Options{WakeTimeout: 2 * time.Minute})
	r.SetWaker(w)
	hp := freePort(t)
	p := route.Port{AppID: "echo", Index: 1, HostPort: hp, Addr: guestAddr, State: route.Up}
	relay := applyPort(t, r, p)

	t.Run("TCPAndUDPReachTheTenant", func(t *testing.T) {
		bannerThenEcho(t, relay, "over tcp\n")
		echoOverUDP(t, relay, "over udp")
	})
	t.Run("TheTenantResolvesANameThroughItsNameServer", func(t *testing.T) {
		got := getBody(t, "http://"+netip.AddrPortFrom(guestIP, 8080).String()+"/resolve?name=echo.test")
		if got != answer.String()+"\n" {
			t.Fatalf("the guest resolved echo.test to %q, want %s\n%s", got, answer, consoleOf(dir))
		}
	})
	sleep := func(t *testing.T) {
		t.Helper()
		if err := v.Sleep(ctx, "echo"); err != nil {
			t.Fatal(err)
		}
		p.State = route.Sleeping
		applyPort(t, r, p)
	}
	t.Run("ATCPConnectionWakesItFromSleep", func(t *testing.T) {
		sleep(t)
		bannerThenEcho(t, relay, "woken over tcp\n")
		if n := w.calls.Load(); n != 1 {
			t.Fatalf("%d wakes, want 1", n)
		}
	})
	t.Run("AUDPDatagramWakesItFromSleep", func(t *testing.T) {
		sleep(t)
		w.calls.Store(0)
		echoOverUDP(t, relay, "woken over udp")
		if n := w.calls.Load(); n != 1 {
			t.Fatalf("%d wakes, want 1", n)
		}
	})
}

// bannerThenEcho connects through the relay and wants the tenant's banner
// and then its line back.
func bannerThenEcho(t *testing.T, addr, line string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	fmt.Fprint(c, line)
	br := bufio.NewReader(c)
	for _, want := range []string{"echo\n", line} {
		if got, err := br.ReadString('\n'); got != want || err != nil {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func consoleOf(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "run", "echo", "console.log"))
	return string(b)
}

// serveDNS answers A queries for name with addr on UDP at at, and every
// other query with no answer: enough of RFC 1035 for a resolver's lookup.
func serveDNS(t *testing.T, at netip.AddrPort, name string, addr netip.Addr) {
	t.Helper()
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(at))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], name, addr); resp != nil {
				pc.WriteToUDPAddrPort(resp, from)
			}
		}
	}()
}

// dnsAnswer is the response to one query, or nil for a malformed one.
func dnsAnswer(q []byte, name string, addr netip.Addr) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	// The question: labels, then type and class.
	i, labels := 12, []string{}
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	resp := append([]byte(nil), q[:2]...)
	match := strings.EqualFold(strings.Join(labels, ".")+".", name)
	answers := uint16(0)
	if match && qtype == 1 {
		answers = 1
	}
	rcode := uint16(0)
	if !match {
		rcode = 3 // NXDOMAIN
	}
	resp = binary.BigEndian.AppendUint16(resp, 0x8180|rcode)
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, answers)
	resp = append(resp, 0, 0, 0, 0)
	resp = append(resp, question...)
	if answers == 1 {
		a := addr.As4()
		resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp
}
