package qemu

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
)

// inNewNetns runs f on an OS thread moved into a fresh network namespace.
// The goroutine ends still locked to that thread, so Go retires the thread
// and nothing else ever runs in the namespace; it vanishes, with its tap,
// once QEMU (started from that thread, so inside it) has exited.
func inNewNetns(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("new network namespace: %w", err)
			return
		}
		if lo, err := netlink.LinkByName("lo"); err == nil {
			_ = netlink.LinkSetUp(lo)
		}
		errc <- f()
	}()
	return <-errc
}

// getOnThisThread is an HTTP GET whose socket is made on the calling
// thread (http.Client dials from other goroutines, hence other threads and
// another namespace).
func getOnThisThread(addr, path string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("%s: %s", resp.Status, b.String())
	}
	return b.String(), nil
}

// slotNetwork is slot n's tap, addresses and host port, as the daemon
// hands them to the VMM.
func slotNetwork(n int) vmm.Network {
	return vmm.Network{
		Tap: slot.Tap(n), HostIPv4: network.HostAddr(n).Addr(), GuestIPv4: network.GuestAddr(n).Addr(),
		PrefixLen: 30, HostPort: slot.HostPort(n),
	}
}

func TestAGuestOnItsSlotsTapAnswersAtItsSlotAddress(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	const n = 5
	spec := f.spec(t, "tapped")
	spec.Slot = n
	spec.Network = slotNetwork(n)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	defer v.Stop(context.Background(), spec.AppID)
	var who string
	err := inNewNetns(func() error {
		if err := network.EnsureTap(n); err != nil {
			return err
		}
		st, err := v.Start(ctx, spec)
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("%s:8080", network.GuestAddr(n).Addr()); st.Endpoint != want {
			return fmt.Errorf("endpoint %s, want %s", st.Endpoint, want)
		}
		for {
			who, err = getOnThisThread(st.Endpoint, "/whoami")
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("the guest never answered at %s: %w", st.Endpoint, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, console(v, spec.AppID))
	}
	if !strings.HasPrefix(who, "65534:65534 ") {
		t.Errorf("whoami = %q", who)
	}
	if !strings.Contains(console(v, spec.AppID), "eth0 "+network.GuestAddr(n).String()) {
		t.Errorf("the init did not report configuring eth0:\n%s", console(v, spec.AppID))
	}
}
