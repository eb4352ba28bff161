package qemu

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/vmm"
)

// procStatus reads the fields of /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// cgroupFile reads file of the cgroup pid is in, in the hierarchy that
// holds controller (v1) or the unified one.
func cgroupFile(t *testing.T, v *VMM, pid int, controller, file string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		dir := ""
		switch {
		case v.cgroups.Version == 2 && f[0] == "0":
			dir = filepath.Join(v.cfg.Jail.CgroupMount, f[2])
		case v.cgroups.Version == 1 && strings.Contains(","+f[1]+",", ","+controller+","):
			dir = filepath.Join(v.cfg.Jail.CgroupMount, controller, f[2])
		default:
			continue
		}
		if !strings.HasPrefix(f[2], "/"+v.cfg.Jail.CgroupParent+"/") {
			t.Fatalf("pid %d is in cgroup %s, not under the guests' parent %s", pid, f[2], v.cfg.Jail.CgroupParent)
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	t.Fatalf("pid %d has no %s cgroup", pid, controller)
	return ""
}

// twoGuests is two apps, a and b, on two slots and one VMM.
type twoGuests struct {
	fa, fb fixture
	v      *VMM
	sa, sb vmm.Spec
	logs   testenv.SyncBuffer
}

func newTwoGuests(t *testing.T) *twoGuests {
	w := &twoGuests{fa: newFixture(t), fb: newFixture(t)}
	w.v = newVMM(t, w.fa.dir, &w.logs)
	w.sa, w.sb = w.fa.spec(t, "a"), w.fb.spec(t, "b")
	w.sa.Slot, w.sb.Slot = slottest.Free(t), slottest.Free(t)
	return w
}

func TestEachGuestRunsInAJailOfItsOwnAndCannotReachAnothersFiles(t *testing.T) {
	testenv.RequireRoot(t)
	nsenter := testenv.RequireCommand(t, "nsenter")
	// A descriptor the daemon inherited from its parent (a script's pipe),
	// open and not close-on-exec: no QEMU may hold it.
	stray, strayW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	defer strayW.Close()
	if _, err := unix.FcntlInt(stray.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	strayPipe, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", stray.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	daemonAdj, err := jail.SelfOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	w := newTwoGuests(t)
	fa, fb, v, sa, sb, logs := w.fa, w.fb, w.v, w.sa, w.sb, &w.logs
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a := started(t, ctx, v, sa, logs)
	b := started(t, ctx, v, sb, logs)
	get(t, a.Endpoint, "/count", 90*time.Second)
	get(t, b.Endpoint, "/count", 90*time.Second)
	// A file of the daemon's beside the guests: its database, its
	// desired state, its control socket.
	stateDir := filepath.Join(fa.dir, "state")
	if err := os.MkdirAll(stateDir, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"state.db", "desired.json", "control.sock"} {
		if err := os.WriteFile(filepath.Join(stateDir, f), []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(v.snapDir("b"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.snapDir("b"), "state"), []byte("b's memory"), 0o644); err != nil {
		t.Fatal(err)
	}

	uids := map[string]bool{}
	for _, g := range []vmm.Status{a, b} {
		st := procStatus(t, g.PID)
		for _, k := range []string{"Uid", "Gid"} {
			for _, id := range strings.Fields(st[k]) {
				if id == "0" {
					t.Errorf("%s's QEMU has %s %s", g.AppID, k, st[k])
				}
			}
		}
		uids[strings.Fields(st["Uid"])[0]] = true
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if st[k] != "0000000000000000" {
				t.Errorf("%s's QEMU has %s %s, want none", g.AppID, k, st[k])
			}
		}
		if st["NoNewPrivs"] != "1" || st["Seccomp"] != "2" {
			t.Errorf("%s's QEMU has NoNewPrivs %s and Seccomp %s, want 1 and 2", g.AppID, st["NoNewPrivs"], st["Seccomp"])
		}
		// Two filters: the launcher's allowlist, and QEMU's -sandbox.
		if st["Seccomp_filters"] != "" && st["Seccomp_filters"] < "2" {
			t.Errorf("%s's QEMU runs %s seccomp filters, want the launcher's and its own", g.AppID, st["Seccomp_filters"])
		}
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", g.PID)); strings.TrimSpace(string(b)) != strconv.Itoa(jail.OOMScoreAdjAbove(daemonAdj)) || jail.OOMScoreAdjAbove(daemonAdj) <= daemonAdj {
			t.Errorf("%s's QEMU has oom_score_adj %q, want %d, above the daemon's %d", g.AppID, strings.TrimSpace(string(b)), jail.OOMScoreAdjAbove(daemonAdj), daemonAdj)
		}
		limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", g.PID))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			fmt.Sprintf(`Max open files\s+%d\s+%d\s`, jail.NoFile, jail.NoFile),
			`Max file size\s+[0-9]+\s+[0-9]+\s+bytes`,
		} {
			if !regexp.MustCompile(want).Match(limits) {
				t.Errorf("%s's QEMU's limits have no %q:\n%s", g.AppID, want, limits)
			}
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", g.PID))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", g.PID, f.Name())); l == strayPipe {
				t.Errorf("%s's QEMU holds the daemon's inherited %s at fd %s", g.AppID, l, f.Name())
			}
		}
		var host, its syscall.Stat_t
		_ = syscall.Stat("/", &host)
		if err := syscall.Stat(fmt.Sprintf("/proc/%d/root/", g.PID), &its); err != nil {
			t.Fatal(err)
		}
		if host.Dev == its.Dev && host.Ino == its.Ino {
			t.Errorf("%s's QEMU has the host's root", g.AppID)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/etc", g.PID)); err == nil {
			t.Errorf("%s's QEMU sees an /etc", g.AppID)
		}
		mem, cpu, pids := "memory.limit_in_bytes", "cpu.cfs_quota_us", "pids.max"
		if v.cgroups.Version == 2 {
			mem, cpu = "memory.max", "cpu.max"
		}
		if got, want := cgroupFile(t, v, g.PID, "memory", mem), strconv.Itoa((128+64+16+tcgCacheMiB)<<20); got != want && v.Accel(ctx) == "tcg" {
			t.Errorf("%s's memory limit is %s, want %s", g.AppID, got, want)
		}
		if got := cgroupFile(t, v, g.PID, "cpu", cpu); !strings.HasPrefix(got, "100000") {
			t.Errorf("%s's CPU quota is %s, want one CPU (100000 µs a period)", g.AppID, got)
		}
		if got := cgroupFile(t, v, g.PID, "pids", pids); got != "256" {
			t.Errorf("%s's pids limit is %s, want 256", g.AppID, got)
		}
	}
	if len(uids) != 2 {
		t.Errorf("the two QEMUs share a uid: %v", uids)
	}

	// Inside a's jail, as a's uid and gid: its own volume opens, nothing
	// of b's or the daemon's does.
	id, _ := v.ids.For(sa.Slot)
	in := func(path string) error {
		cmd := exec.Command(nsenter, "-t", strconv.Itoa(a.PID), "-m", "-r", "-w",
			"-S", strconv.Itoa(id.UID), "-G", strconv.Itoa(id.GID), "--", "/usr/bin/head", "-c", "1", path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := in(fa.volume); err != nil {
		t.Fatalf("a cannot read its own volume in its jail (so the test proves nothing): %v", err)
	}
	for _, p := range []string{
		fb.volume, v.snapDir("b") + "/state", v.snapDir("b"), fmt.Sprintf("/proc/%d/environ", b.PID),
		filepath.Join(stateDir, "state.db"), filepath.Join(stateDir, "desired.json"), filepath.Join(stateDir, "control.sock"),
		"/etc/shadow", v.pidfile("b"), filepath.Join(v.appDir("b"), configDrive),
	} {
		if err := in(p); err == nil {
			t.Errorf("a's jail reads %s", p)
		} else {
			t.Logf("a's jail cannot read %s: %v", p, err)
		}
	}
}

func TestAGuestPastItsMemoryLimitIsKilledAndReportedAloneWhileAnotherRunsOn(t *testing.T) {
	testenv.RequireRoot(t)
	w := newTwoGuests(t)
	v, sa, sb, logs := w.v, w.sa, w.sb, &w.logs
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// a's limit is less than what its QEMU, the guest's boot and 160 MiB
	// the app then holds touch: a small guest kernel boots under it, so
	// the app is asked to hold memory until the kill comes.
	sa.MemoryMiB = 256
	guestLimits = func(m machine) jail.Limits {
		l := m.limits()
		if m.Spec.AppID == "a" {
			l.MemoryMax = 96 << 20
		}
		return l
	}
	defer func() { guestLimits = machine.limits }()
	if _, err := v.Start(ctx, sa); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Stop(context.Background(), "a") })
	b := started(t, ctx, v, sb, logs)
	get(t, b.Endpoint, "/count", 90*time.Second)
	deadline := time.Now().Add(90 * time.Second)
	hold := http.Client{Timeout: 5 * time.Second}
	for {
		sts, _ := v.List(ctx)
		var st vmm.Status
		for _, s := range sts {
			if s.AppID == "a" {
				st = s
			}
		}
		if st.State == vmm.Running && st.Endpoint != "" {
			// Fails while a boots, and when the kill ends it.
			if resp, err := hold.Get("http://" + st.Endpoint + "/hold?mib=160"); err == nil {
				resp.Body.Close()
			}
		}
		if st.State == vmm.Exited {
			if !strings.Contains(st.Message, "killed at its memory limit") {
				t.Fatalf("a ended with message %q, want one naming its memory limit", st.Message)
			}
			t.Logf("a: %s", st.Message)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's QEMU outlived its memory limit: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := get(t, b.Endpoint, "/count", 10*time.Second); got != "2" {
		t.Errorf("b answers %q after a's kill, want 2", got)
	}
	if _, err := os.Stat(v.cgroups.Dir("memory", "a")); err == nil {
		t.Errorf("a's cgroup outlived it")
	}
	// Nothing stays a gone guest's uid's.
	for _, p := range []string{w.fa.volume, v.vmDir("a"), v.ConsolePath("a")} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err == nil && (st.Uid != 0 || st.Gid != 0) {
			t.Errorf("%s is still uid %d gid %d after a's QEMU ended", p, st.Uid, st.Gid)
		}
	}
}
