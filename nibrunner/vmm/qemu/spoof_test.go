package qemu

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/slot"
)

// A guest with root in its own kernel (the spoofer as its PID 1) sends
// datagrams through its real tap, jailed QEMU and all: the ones from its
// own address leave the uplink, masqueraded as the host; the ones from an
// address it forged never do, with reverse-path filtering off so that
// only the nibrun table's rule on the tap stands in the way.
func TestAGuestWithRootCannotForgeItsWayOutOfTheUplink(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip", "nft")
	f := newFixture(t)
	img := testImage(t)

	// The guest image, with the spoofer for init.
	bin := filepath.Join(f.dir, "spoofer")
	build := exec.Command("go", "build", "-o", bin, "./testdata/spoofer")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the spoofer: %v\n%s", err, out)
	}
	initBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	initrd, err := guestimage.InitramfsOf(initBin)
	if err != nil {
		t.Fatal(err)
	}
	img.Initrd = filepath.Join(f.dir, "spoofer.cpio")
	if err := os.WriteFile(img.Initrd, initrd, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, err := New(ctx, Config{Image: img, RuntimeDir: filepath.Join(f.dir, "run"), SnapshotDir: filepath.Join(f.dir, "snap")})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	// The host's namespace: the slot's tap, the nibrun table, and an
	// uplink to the outside, where the datagrams are counted.
	id := fmt.Sprintf("nbs%d", os.Getpid()%100000)
	host, out := testenv.Netns(t, id+"-h"), testenv.Netns(t, id+"-o")
	testenv.IP(t, "-n", host, "link", "add", "up0", "type", "veth", "peer", "name", "uplink", "netns", out)
	testenv.IP(t, "-n", host, "addr", "add", "192.0.2.1/24", "dev", "up0")
	testenv.IP(t, "-n", host, "link", "set", "up0", "up")
	testenv.IP(t, "-n", host, "route", "add", "default", "via", "192.0.2.2")
	testenv.IP(t, "-n", out, "addr", "add", "192.0.2.2/24", "dev", "uplink")
	testenv.IP(t, "-n", out, "link", "set", "uplink", "up")
	testenv.IP(t, "-n", out, "route", "add", slot.Subnet.String(), "via", "192.0.2.1")
	const n = 4
	spec := f.spec(t, "spoofer")
	spec.Slot = n
	spec.Network = slotNetwork(n)
	err = testenv.InNetns(host, func() error {
		if err := network.SetSysctls(network.HostSysctls); err != nil {
			return err
		}
		if err := network.EnsureTap(n); err != nil {
			return err
		}
		if err := network.ConfigureLink(n, slot.Tap(n)); err != nil {
			return err
		}
		// Reverse-path filtering off, as on a host whose default is 0
		// or loose (2 would pass a forged source with a route back out of
		// the uplink): only the table's rule may drop the forged ones.
		if err := network.SetSysctls([]network.Sysctl{
			{Key: "net.ipv4.conf.all.rp_filter", Value: "0"},
			{Key: "net.ipv4.conf." + slot.Tap(n) + ".rp_filter", Value: "0"},
		}); err != nil {
			return err
		}
		rules := network.Rules{Apps: []network.App{{Slot: n, AppID: spec.AppID, Running: true, HTTPPort: 8080}}}
		if err := (network.Firewall{}).Apply(ctx, rules); err != nil {
			return err
		}
		_, err := v.Start(ctx, spec)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop(context.Background(), spec.AppID)

	var pc net.PacketConn
	if err := testenv.InNetns(out, func() (err error) { pc, err = net.ListenPacket("udp4", "192.0.2.2:7000"); return err }); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	// The guest boots under TCG; then "own" comes every 300 ms. Ten of
	// them, the forged one sent just after each, and none forged seen.
	own := 0
	buf := make([]byte, 64)
	for own < 10 {
		_ = pc.SetReadDeadline(time.Now().Add(2 * time.Minute))
		k, from, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d of the guest's own datagrams: %v\nconsole:\n%s", own, err, console(v, spec.AppID))
		}
		switch text := string(buf[:k]); text {
		case "own":
			own++
			if h, _, _ := net.SplitHostPort(from.String()); h != "192.0.2.1" {
				t.Errorf("the guest's own datagram left as %s, want the host's 192.0.2.1", h)
			}
		default:
			t.Fatalf("%q left the uplink, from %s\nconsole:\n%s", text, from, console(v, spec.AppID))
		}
	}
	if c := console(v, spec.AppID); !strings.Contains(c, "spoofer: eth0 ") || strings.Contains(c, "send forged") {
		t.Errorf("the spoofer did not send both kinds (its console):\n%s", c)
	}
}
