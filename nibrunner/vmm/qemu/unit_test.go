package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/vmm"
)

// fakeQMP serves one QMP connection: a greeting, then for each command an
// event followed by the reply, so the client must tell them apart.
func fakeQMP(t *testing.T, answer func(cmd string, args json.RawMessage) (any, string)) string {
	t.Helper()
	path := filepath.Join(shortTempDir(t), "qmp.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte(`{"QMP": {"version": {"qemu": {"major": 7}}, "capabilities": []}}` + "\n"))
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var req struct {
				Execute   string          `json:"execute"`
				Arguments json.RawMessage `json:"arguments"`
				ID        uint64          `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			_, _ = c.Write([]byte(`{"event": "RESUME", "timestamp": {"seconds": 1}}` + "\n"))
			ret, errDesc := any(map[string]any{}), ""
			if req.Execute != "qmp_capabilities" {
				ret, errDesc = answer(req.Execute, req.Arguments)
			}
			var b []byte
			if errDesc != "" {
				b, _ = json.Marshal(map[string]any{"error": map[string]string{"class": "GenericError", "desc": errDesc}, "id": req.ID})
			} else {
				b, _ = json.Marshal(map[string]any{"return": ret, "id": req.ID})
			}
			_, _ = c.Write(append(b, '\n'))
		}
	}()
	return path
}

func TestTheQMPClientNegotiatesAndMatchesAnswersPastEvents(t *testing.T) {
	path := fakeQMP(t, func(cmd string, args json.RawMessage) (any, string) {
		switch cmd {
		case "query-status":
			return map[string]any{"status": "paused", "running": false}, ""
		case "migrate":
			var a struct{ URI string }
			_ = json.Unmarshal(args, &a)
			if !strings.HasPrefix(a.URI, "exec:cat > ") {
				return nil, "bad uri " + a.URI
			}
			return map[string]any{}, ""
		}
		return nil, "The command " + cmd + " has not been found"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := dialQMP(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	if st, err := q.status(ctx); err != nil || st != "paused" {
		t.Fatalf("status = %q, %v", st, err)
	}
	if _, err := q.execute(ctx, "migrate", map[string]any{"uri": "exec:cat > " + shellQuote("/s/it's")}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.execute(ctx, "no-such", nil); err == nil || !strings.Contains(err.Error(), "has not been found") {
		t.Fatalf("an unknown command gave %v", err)
	}
}

func TestAQMPCommandAfterQEMUIsGoneFailsInsteadOfHanging(t *testing.T) {
	path := fakeQMP(t, func(cmd string, _ json.RawMessage) (any, string) { return nil, "" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := dialQMP(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	q.close()
	if _, err := q.execute(ctx, "stop", nil); err == nil {
		t.Fatal("a command on a closed connection succeeded")
	}
}

func TestTheControlChannelMatchesRepliesAndPassesOtherMessagesOn(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "control.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan guest.Message, 8)
	c := newControl(path, func(m guest.Message) { got <- m })
	go c.run()
	defer c.close()
	conn, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// The fake guest: a log line first, then answer each request.
	go func() {
		enc := guest.NewEncoder(conn)
		_ = enc.Send(guest.Message{Kind: guest.KindLog, Stream: "stdout", Data: "hello\n"})
		dec := guest.NewDecoder(conn)
		for {
			m, err := dec.Next()
			if err != nil {
				return
			}
			r := guest.Message{Kind: guest.KindReply, ID: m.ID}
			if m.Kind == guest.KindMeasure {
				r.Measurement = &guest.Measurement{MemoryTotalBytes: 128 << 20}
			} else {
				r.Error = "cannot " + string(m.Kind)
			}
			_ = enc.Send(r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.request(ctx, guest.Message{Kind: guest.KindMeasure})
	if err != nil || r.Measurement.MemoryTotalBytes != 128<<20 {
		t.Fatalf("measure: %+v, %v", r, err)
	}
	if _, err := c.request(ctx, guest.Message{Kind: guest.KindFreeze}); err == nil || !strings.Contains(err.Error(), "cannot freeze") {
		t.Fatalf("a refused request gave %v", err)
	}
	select {
	case m := <-got:
		if m.Kind != guest.KindLog || m.Data != "hello\n" {
			t.Fatalf("passed on %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the log line was not passed on")
	}
}

func testMachine() machine {
	return machine{
		QEMU: "/usr/bin/qemu-system-x86_64", Accel: "tcg", Kernel: "/img/vmlinuz", Initrd: "/img/initrd", Base: "/img/base",
		Layers: []string{"/cache/a.sqfs", "/cache/b.ext4"}, Volume: "/vol/app.ext4", Config: "/run/app/config.img", Dir: "/run/app",
		Spec: vmm.Spec{AppID: "app", DeploymentID: "d1", Slot: 2, MemoryMiB: 256, VCPUs: 2, HTTPPort: 3000,
			Network: vmm.Network{Tap: "nbr2", HostIPv4: netip.MustParseAddr("10.201.0.9"), GuestIPv4: netip.MustParseAddr("10.201.0.10"), PrefixLen: 30, HostPort: 21016}},
	}
}

func TestATCGGuestGetsTheEarlyTSCFrequencyAndAKVMGuestDoesNot(t *testing.T) {
	m := testMachine()
	if !strings.Contains(m.kernelCmdline(), "tsc_early_khz=2000000") {
		t.Errorf("TCG command line lacks tsc_early_khz: %s", m.kernelCmdline())
	}
	m.Accel = "kvm"
	if strings.Contains(m.kernelCmdline(), "tsc_early_khz") {
		t.Errorf("KVM command line has tsc_early_khz: %s", m.kernelCmdline())
	}
}

// init_on_free would have the guest write all its RAM at the end of boot;
// the balloon reports what it frees instead.
func TestAGuestHasAFreePageReportingBalloonAndNoInitOnFree(t *testing.T) {
	m := testMachine()
	a := strings.Join(m.args(1700000000), " ")
	if !strings.Contains(a, "-device virtio-balloon-device,free-page-reporting=on") {
		t.Errorf("command line lacks the free page reporting balloon:\n%s", a)
	}
	if strings.Contains(a, "init_on_free") {
		t.Errorf("command line zeroes freed pages, which touches all guest RAM at boot:\n%s", a)
	}
}

func TestTheCommandLineAttachesDrivesBySerialAndTheTapWithTheSlotsAddress(t *testing.T) {
	m := testMachine()
	a := strings.Join(m.args(1700000000), " ")
	for _, want := range []string{
		"-M microvm,rtc=off,acpi=off", "-accel tcg,tb-size=32", "-m 256", "-smp 2", "-no-reboot",
		"id=l0,file=/cache/a.sqfs,format=raw,if=none,readonly=on", "drive=l0,serial=nibrun-layer-0",
		"id=l1,file=/cache/b.ext4,format=raw,if=none,readonly=on", "drive=l1,serial=nibrun-layer-1",
		"id=vol,file=/vol/app.ext4,format=raw,if=none,readonly=off", "serial=nibrun-volume", "serial=nibrun-config", "serial=nibrun-base",
		"tap,id=n0,ifname=nbr2,script=no,downscript=no", "virtio-net-device,netdev=n0,mac=52:54:00:6e:00:02",
		"nibrun.ip=10.201.0.10/30 nibrun.gw=10.201.0.9", "nibrun.time=1700000000",
		"virtserialport,chardev=ctl,name=nibrun.control", "-chardev file,id=con,path=/dev/fdset/1,append=on -serial chardev:con",
	} {
		if !strings.Contains(a, want) {
			t.Errorf("command line lacks %q:\n%s", want, a)
		}
	}
	if m.endpoint() != "10.201.0.10:3000" {
		t.Errorf("endpoint %s", m.endpoint())
	}
}

func TestAGuestWithoutATapHasNoNetworkUnlessUserNetworkingIsOn(t *testing.T) {
	m := testMachine()
	m.Spec.Network = vmm.Network{HostPort: 21016}
	if a := m.args(0); slices.Contains(a, "-netdev") || m.endpoint() != "" {
		t.Errorf("a guest without a tap got a network: %v", a)
	}
	m.UserNet = true
	a := strings.Join(m.args(0), " ")
	if !strings.Contains(a, "hostfwd=tcp:127.0.0.1:21016-:3000") || m.endpoint() != "127.0.0.1:21016" {
		t.Errorf("user networking: %s, endpoint %s", a, m.endpoint())
	}
	// Restricted: the guest reaches neither the host (10.0.2.2) nor
	// beyond; the forwards still reach it.
	if !strings.Contains(a, "-netdev user,id=n0,restrict=on,hostfwd=") {
		t.Errorf("user networking is not restricted: %s", a)
	}
}

func TestTheMachineHashChangesWithTheMemorySizeAndTheAccelerator(t *testing.T) {
	m := testMachine()
	h := m.Hash()
	if m.Hash() != h {
		t.Fatal("the hash is not stable")
	}
	m.Spec.MemoryMiB = 512
	if m.Hash() == h {
		t.Error("a different memory size gave the same machine hash")
	}
	m = testMachine()
	m.Accel = "kvm"
	if m.Hash() == h {
		t.Error("a different accelerator gave the same machine hash")
	}
}

func TestAStampMismatchSaysInASentenceWhatDiffers(t *testing.T) {
	s := Stamp{Format: stampFormat, AppID: "a", DeploymentID: "d1", GuestImage: "gi-1", QEMU: "7.2.15", MachineType: "microvm,rtc=off,acpi=off under tcg",
		GuestKernel: "6.1.1", MemoryMiB: 256, Machine: "m", BootID: "b", Network: guestNetwork{IP: "10.201.0.2/30"}}
	if w := s.Mismatch(s); w != "" {
		t.Fatalf("a stamp differs from itself: %s", w)
	}
	for _, c := range []struct {
		change func(*Stamp)
		want   string
	}{
		{func(x *Stamp) { x.AppID = "b" }, `the snapshot is of app "a", not "b"`},
		{func(x *Stamp) { x.DeploymentID = "d2" }, "the snapshot is of deployment d1, and the app now runs deployment d2"},
		{func(x *Stamp) { x.GuestImage = "gi-2" }, "the snapshot was taken in guest image gi-1, and this host boots guest image gi-2"},
		{func(x *Stamp) { x.QEMU = "8.2.2" }, "the snapshot was saved by QEMU 7.2.15, and this host runs QEMU 8.2.2: QEMU reads a microvm's saved state only in the version that wrote it"},
		{func(x *Stamp) { x.MachineType = "microvm,rtc=off,acpi=off under kvm on AMD EPYC" },
			"the snapshot's machine is microvm,rtc=off,acpi=off under tcg, and this host's is microvm,rtc=off,acpi=off under kvm on AMD EPYC"},
		{func(x *Stamp) { x.GuestKernel = "6.1.2" }, "the snapshot's guest kernel is 6.1.1, and this host boots 6.1.2"},
		{func(x *Stamp) { x.MemoryMiB = 512 }, "the snapshot holds 256 MiB of memory, and the app now has 512 MiB"},
		{func(x *Stamp) { x.Machine = "n" }, "the snapshot's devices (vCPUs, drives, network) are not the ones the app now has"},
	} {
		want := s
		c.change(&want)
		if got := s.Mismatch(want); got != c.want {
			t.Errorf("mismatch %q, want %q", got, c.want)
		}
	}
	older := s
	older.Format = 0
	if got := older.Mismatch(s); got != "the snapshot's stamp is of format 0, which keyed it to its host boot and slot; this host reads format 2" {
		t.Errorf("a first format's mismatch %q", got)
	}
	newer := s
	newer.Format = stampFormat + 1
	if got := newer.Mismatch(s); got != "the snapshot's stamp is of format 3, newer than this host's 2" {
		t.Errorf("a newer format's mismatch %q", got)
	}
	// What names the host or the slot is not matched: a snapshot wakes
	// after a reboot, in another slot, on another host.
	elsewhere := s
	elsewhere.BootID, elsewhere.Network = "another host", guestNetwork{IP: "10.201.0.6/30", Gateway: "10.201.0.5"}
	if w := s.Mismatch(elsewhere); w != "" {
		t.Errorf("a snapshot from another boot and slot is refused: %s", w)
	}
}

func TestTheMachineHashLeavesOutWhatNamesTheHostOrTheSlot(t *testing.T) {
	m := testMachine()
	h := m.Hash()
	o := testMachine()
	o.Kernel, o.Initrd, o.Base, o.Volume, o.Config, o.Dir = "/b/vmlinuz", "/b/initrd", "/b/base", "/b/vol.ext4", "/b/run/app/config.img", "/b/run/app"
	o.Layers = []string{"/b/cache/a.sqfs", "/b/cache/b.ext4"}
	o.TapFD = 3
	o.Spec.AppID, o.Spec.Slot = "app", 7
	o.Spec.Network = vmm.Network{Tap: "nbr7", HostIPv4: netip.MustParseAddr("10.201.0.29"), GuestIPv4: netip.MustParseAddr("10.201.0.30"), PrefixLen: 30, HostPort: 21056}
	if o.Hash() != h {
		t.Error("another host's paths and another slot's tap, MAC and addresses gave another machine hash")
	}
	o.UserNet, o.Spec.Network = true, vmm.Network{HostPort: 21016}
	if o.Hash() != h {
		t.Error("user networking in place of a tap gave another machine hash (the device is the same)")
	}
	o.UserNet, o.Spec.Network = false, vmm.Network{}
	if o.Hash() == h {
		t.Error("a guest without a network device has the hash of one with")
	}
	o = testMachine()
	o.Layers = o.Layers[:1]
	if o.Hash() == h {
		t.Error("a guest with one layer fewer has the same machine hash")
	}
	o = testMachine()
	o.Spec.VCPUs = 1
	if o.Hash() == h {
		t.Error("a guest with fewer vCPUs has the same machine hash")
	}
}

func TestAGuestKeepsTheNetworkItWasToldInTheStampOfItsSnapshot(t *testing.T) {
	m := testMachine()
	m.Spec.Network.DNS = []netip.Addr{netip.MustParseAddr("9.9.9.9"), netip.MustParseAddr("1.1.1.1")}
	v := &VMM{cfg: Config{Image: guestimage.Image{Version: "gi-1", KernelRelease: "6.1.1"}}, version: "7.2.15", bootID: "b"}
	s := v.stampOf(m)
	want := guestNetwork{IP: "10.201.0.10/30", Gateway: "10.201.0.9", DNS: "9.9.9.9,1.1.1.1"}
	if s.Network != want {
		t.Errorf("stamp network %+v, want %+v", s.Network, want)
	}
	if !strings.Contains(m.kernelCmdline(), "nibrun.ip=10.201.0.10/30 nibrun.gw=10.201.0.9 nibrun.dns=9.9.9.9,1.1.1.1") {
		t.Errorf("the kernel command line does not carry the same network: %s", m.kernelCmdline())
	}
	if s.Format != stampFormat || s.QEMU != "7.2.15" || s.GuestKernel != "6.1.1" || s.MemoryMiB != 256 || s.MachineType != "microvm,rtc=off,acpi=off under tcg" {
		t.Errorf("stamp %+v", s)
	}
}

func TestTheGuestConfigCarriesTheCommandAndTheRestartPolicyInMilliseconds(t *testing.T) {
	c := guestConfig(vmm.Spec{AppID: "a", Layers: make([]vmm.Layer, 3), HTTPPort: 80, Hostname: "a.example.com",
		Command: vmm.Command{Program: "/bin/x", Args: []string{"-v"}, WorkingDirectory: "/w", Environment: map[string]string{"K": "v"}},
		Restart: vmm.RestartPolicy{MaxRestarts: 5, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 10 * time.Second, BackoffFactor: 2, ResetAfter: time.Minute}})
	if c.Layers != 3 || c.Program != "/bin/x" || c.Args[0] != "-v" || c.Environment["K"] != "v" || c.Hostname != "a.example.com" {
		t.Errorf("config %+v", c)
	}
	if c.Restart.InitialBackoffMs != 250 || c.Restart.MaxBackoffMs != 10000 || c.Restart.ResetAfterMs != 60000 || c.Restart.MaxRestarts != 5 {
		t.Errorf("restart policy %+v", c.Restart)
	}
}

func TestSnapshotsOutliveAHostRebootButHalfWrittenAndFirstFormatOnesAreRemovedAtStart(t *testing.T) {
	testenv.RequireCommand(t, "qemu-system-x86_64")
	dir := shortTempDir(t)
	snap := filepath.Join(dir, "snap")
	bootID, err := vmm.BootID()
	if err != nil {
		t.Fatal(err)
	}
	for app, s := range map[string]Stamp{
		"rebooted":      {Format: stampFormat, AppID: "rebooted", BootID: "another-boot"},
		"old":           {AppID: "old", BootID: "another-boot"},
		"old-this-boot": {AppID: "old-this-boot", BootID: bootID},
	} {
		d := filepath.Join(snap, app)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeStamp(d, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(snap, "half-written"), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := New(context.Background(), Config{RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: snap, Accel: "tcg"})
	if err != nil {
		t.Fatal(err)
	}
	if !v.HasSnapshot("rebooted") || v.HasSnapshot("old") || !v.HasSnapshot("old-this-boot") {
		t.Errorf("after start: rebooted kept %v (want true), old kept %v (want false), old-this-boot kept %v (want true)",
			v.HasSnapshot("rebooted"), v.HasSnapshot("old"), v.HasSnapshot("old-this-boot"))
	}
	if _, err := os.Stat(filepath.Join(snap, "half-written")); !os.IsNotExist(err) {
		t.Errorf("a snapshot without a stamp survived: %v", err)
	}
}

func TestTheTenantLogRotatesInsteadOfGrowingWithoutBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), tenantLogFile)
	l := tenantLog{path: p}
	chunk := strings.Repeat("x", 64<<10) + "\n"
	for i := 0; i < (tenantLogMax/len(chunk))+4; i++ {
		l.write("stdout", chunk)
	}
	l.write("stderr", "last words")
	l.close()
	cur, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(p + ".1")
	if err != nil {
		t.Fatalf("no rotated file: %v", err)
	}
	if len(cur) >= tenantLogMax || old.Size() < tenantLogMax || old.Size() > tenantLogMax+int64(len(chunk))+64 {
		t.Errorf("current %d bytes, rotated %d bytes; the bound is %d", len(cur), old.Size(), tenantLogMax)
	}
	if !strings.HasSuffix(string(cur), " stderr last words\n") {
		t.Errorf("the last line is not stamped and newline-ended: %q", cur[max(0, len(cur)-40):])
	}
}

func TestTheGuestRAMIsTheAnonymousMappingOfTheGuestsSizeInSmaps(t *testing.T) {
	smaps := `55d0c0000000-55d0c0a00000 r-xp 00000000 fe:01 1234   /usr/bin/qemu-system-x86_64
Size:              10240 kB
Rss:                9000 kB
Pss:                1000 kB
7f0000000000-7f0008200000 rw-p 00000000 00:00 0 
Size:             133120 kB
Rss:               46100 kB
Pss:               46100 kB
7f0010000000-7f0012000000 rwxp 00000000 00:00 0 
Size:              32768 kB
Rss:               30000 kB
Pss:               30000 kB
7f0020000000-7f0028000000 rw-p 00000000 00:00 0    /memfd:other (deleted)
Size:             131072 kB
Rss:              131072 kB
Pss:              131072 kB
`
	got, err := guestRAMResident([]byte(smaps), 128<<20)
	if err != nil || got != 46100<<10 {
		t.Fatalf("guest RAM resident %d, %v; want the 128 MiB anonymous mapping's 46100 kB", got, err)
	}
	if _, err := guestRAMResident([]byte(smaps), 512<<20); err == nil {
		t.Fatal("a guest of 512 MiB was found in a process with no such mapping")
	}
	// What Measure reports: the PSS, and of it the TCG cache (the
	// anonymous executable mapping) and the guest RAM.
	ms, err := parseSmaps([]byte(smaps))
	if err != nil {
		t.Fatal(err)
	}
	if h, want := shareOf(ms, 128<<20), (hostShare{PSS: (1000 + 46100 + 30000 + 131072) << 10, TCG: 30000 << 10, GuestRAM: 46100 << 10}); h != want {
		t.Fatalf("host share %+v, want %+v", h, want)
	}
	if _, err := parseSmaps([]byte("Pss: 1 kB\n")); err == nil {
		t.Fatal("a smaps without a mapping parsed")
	}
	if _, err := parseSmaps([]byte("7f0000000000-7f0010000000 rw-p 00000000 00:00 0\nPss: 99999999999999999999 kB\n")); err == nil {
		t.Fatal("a Pss past uint64 parsed")
	}
}

func TestAGuestOnATapIsGivenItsNameServersOnTheCommandLine(t *testing.T) {
	m := testMachine()
	if strings.Contains(m.kernelCmdline(), "nibrun.dns") {
		t.Fatalf("no name servers, yet %s", m.kernelCmdline())
	}
	m.Spec.Network.DNS = []netip.Addr{netip.MustParseAddr("192.0.2.53"), netip.MustParseAddr("2001:db8::53")}
	if !strings.Contains(m.kernelCmdline(), " nibrun.dns=192.0.2.53,2001:db8::53") {
		t.Fatalf("command line %s lacks the name servers", m.kernelCmdline())
	}
}
