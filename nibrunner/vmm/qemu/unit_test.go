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

func TestAStampMismatchNamesWhatDiffers(t *testing.T) {
	s := Stamp{AppID: "a", DeploymentID: "d1", GuestImage: "gi-1", BootID: "b", Slot: 1, Machine: "m"}
	if w := s.Mismatch(s); w != "" {
		t.Fatalf("a stamp differs from itself: %s", w)
	}
	for field, change := range map[string]func(*Stamp){
		"deployment":  func(x *Stamp) { x.DeploymentID = "d2" },
		"guest image": func(x *Stamp) { x.GuestImage = "gi-2" },
		"host boot":   func(x *Stamp) { x.BootID = "c" },
		"slot":        func(x *Stamp) { x.Slot = 2 },
		"machine":     func(x *Stamp) { x.Machine = "n" },
	} {
		want := s
		change(&want)
		if w := s.Mismatch(want); !strings.HasPrefix(w, field) {
			t.Errorf("changing the %s gave mismatch %q", field, w)
		}
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

func TestSnapshotsFromAnEarlierHostBootAreRemovedAtStart(t *testing.T) {
	testenv.RequireCommand(t, "qemu-system-x86_64")
	dir := shortTempDir(t)
	snap := filepath.Join(dir, "snap")
	bootID, err := vmm.BootID()
	if err != nil {
		t.Fatal(err)
	}
	for app, boot := range map[string]string{"old": "another-boot", "current": bootID} {
		d := filepath.Join(snap, app)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeStamp(d, Stamp{AppID: app, BootID: boot}); err != nil {
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
	if v.HasSnapshot("old") || !v.HasSnapshot("current") {
		t.Errorf("after start: old kept %v, current kept %v", v.HasSnapshot("old"), v.HasSnapshot("current"))
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
