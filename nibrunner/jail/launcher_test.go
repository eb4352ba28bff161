package jail

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
)

// probeArg makes this test binary, run by the launcher, the program under
// test: it tries what the filter must refuse, says what it got, and (with
// "wait") then waits for its stdin to close.
const probeArg = "__jail-probe"

// launcherTestMain runs the launcher or the probe when asked, returning
// the exit code, or -1 when this is an ordinary test run.
func launcherTestMain() int {
	if IsLauncher(os.Args) {
		return RunLauncher(os.Args)
	}
	if len(os.Args) < 3 || os.Args[1] != probeArg {
		return -1
	}
	if os.Args[2] == "wait" {
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	try := func(name string, nr uintptr, args ...uintptr) {
		var a [6]uintptr
		copy(a[:], args)
		_, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		fmt.Printf("%s %s\n", name, unix.ErrnoName(errno))
	}
	try("netlink", unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, 0)
	try("packet", unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0)
	try("vsock", unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	try("keyctl", unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, 0, 0)
	try("bpf", unix.SYS_BPF, 0, 0, 0)
	try("userfaultfd", unix.SYS_USERFAULTFD, 0)
	try("fork", unix.SYS_CLONE, uintptr(unix.SIGCHLD))
	var params [120]byte
	try("io_uring_setup", unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])))
	try("io_uring_enter", unix.SYS_IO_URING_ENTER, 0, 1, 0, 0)
	return 0
}

// seccompData is struct seccomp_data as the VM of x/net/bpf reads it: its
// loads are big-endian, the kernel's native, so each word is written so.
func seccompData(arch, nr uint32, arg0 uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], arch)
	binary.BigEndian.PutUint32(b[offArg0:], uint32(arg0))
	return b
}

func TestTheFilterAllowsWhatItListsKillsIoUringsCallsAndRefusesTheRest(t *testing.T) {
	raw, err := Filter()
	if err != nil {
		t.Fatal(err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
	}{
		{"read", auditArch, unix.SYS_READ, 0, retAllow},
		{"execve", auditArch, unix.SYS_EXECVE, 0, retAllow},
		{"a thread", auditArch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD, retAllow},
		{"a new process", auditArch, unix.SYS_CLONE, uint64(unix.SIGCHLD), retNoSys},
		{"clone3", auditArch, unix.SYS_CLONE3, 0, retNoSys},
		{"io_uring_setup", auditArch, unix.SYS_IO_URING_SETUP, 0, retNoSys},
		{"io_uring_enter", auditArch, unix.SYS_IO_URING_ENTER, 0, retKill},
		{"keyctl", auditArch, unix.SYS_KEYCTL, 0, retNoSys},
		{"bpf", auditArch, unix.SYS_BPF, 0, retNoSys},
		{"userfaultfd", auditArch, unix.SYS_USERFAULTFD, 0, retNoSys},
		{"renameat2", auditArch, unix.SYS_RENAMEAT2, 0, retNoSys},
		{"a unix socket", auditArch, unix.SYS_SOCKET, unix.AF_UNIX, retAllow},
		{"an IPv6 socket", auditArch, unix.SYS_SOCKET, unix.AF_INET6, retAllow},
		{"a netlink socket", auditArch, unix.SYS_SOCKET, unix.AF_NETLINK, retNoAF},
		{"a packet socket", auditArch, unix.SYS_SOCKET, unix.AF_PACKET, retNoAF},
		{"a vsock socket", auditArch, unix.SYS_SOCKET, unix.AF_VSOCK, retNoAF},
		{"another architecture", auditArch ^ 1, unix.SYS_READ, 0, retKill},
	} {
		got, err := vm.Run(seccompData(c.arch, c.nr, c.arg0))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if uint32(got) != c.want {
			t.Errorf("%s: the filter returns %#x, want %#x", c.name, uint32(got), c.want)
		}
	}
}

// probePlan is a plan that runs this test binary as the probe, as nobody,
// in a jail whose root is under dir.
func probePlan(t *testing.T, mode string, handed int) Plan {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	binds, err := RootBinds(Files{Program: exe})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return Plan{
		Root: root, Binds: binds, Identity: Identity{UID: 65534, GID: 65534}, Groups: []int{},
		Program: exe, Args: []string{probeArg, mode}, Handed: handed,
		Rlimits: Rlimits{NoFile: 64, FileSize: 1 << 20}, OOMScoreAdj: 700,
	}
}

// io_uring_setup fails (QEMU probes it at every start and falls back);
// io_uring_enter, which only a ring obtained otherwise could reach, kills.
func TestTheLaunchersFilterRefusesWhatQEMUNeverNeedsAndKillsIoUring(t *testing.T) {
	testenv.RequireRoot(t)
	cmd, err := Command(probePlan(t, "calls", 0), true)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSYS {
		t.Fatalf("the probe ended with %v, want killed by SIGSYS at io_uring_enter (stdout %q, stderr %q)", err, out.String(), errb.String())
	}
	want := "netlink EAFNOSUPPORT\npacket EAFNOSUPPORT\nvsock EAFNOSUPPORT\nkeyctl ENOSYS\nbpf ENOSYS\nuserfaultfd ENOSYS\nfork ENOSYS\nio_uring_setup ENOSYS\n"
	if out.String() != want {
		t.Errorf("the probe says\n%s\nwant\n%s", out.String(), want)
	}
}

func TestTheLaunchedProgramInheritsNoStrayDescriptorAndRunsUnderLimitsAndTheFilter(t *testing.T) {
	testenv.RequireRoot(t)
	// A descriptor this process inherited from its parent, as a daemon
	// started by a script might: open, and not close-on-exec.
	stray, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	defer w.Close()
	if _, err := unix.FcntlInt(stray.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	handed, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer handed.Close()
	cmd, err := Command(probePlan(t, "wait", 1), true)
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{handed}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(outp).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the probe did not start: %q %v (stderr %q)", line, err, errb.String())
	}
	pid := cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The probe's own runtime may reuse the stray's number: what it must
	// not hold is the stray's pipe.
	strayPipe, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", stray.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, f := range fds {
		held[f.Name()], _ = os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, f.Name()))
		if held[f.Name()] == strayPipe {
			t.Errorf("the program holds the inherited %s at fd %s", strayPipe, f.Name())
		}
	}
	if held["3"] != os.DevNull {
		t.Errorf("fd 3 is %q, want the handed %s (all: %v)", held["3"], os.DevNull, held)
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`Max file size\s+1048576\s+1048576\s+bytes`, `Max open files\s+64\s+64\s+files`} {
		if !regexp.MustCompile(want).Match(limits) {
			t.Errorf("/proc/%d/limits has no %q:\n%s", pid, want, limits)
		}
	}
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid)); strings.TrimSpace(string(b)) != "700" {
		t.Errorf("oom_score_adj %q, want 700", b)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	if st["Seccomp"] != "2" || st["NoNewPrivs"] != "1" {
		t.Errorf("Seccomp %q NoNewPrivs %q, want 2 and 1", st["Seccomp"], st["NoNewPrivs"])
	}
}
