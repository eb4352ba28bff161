package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guest"
)

// probeName is what a copy of this test binary is called when it is only
// to print who it runs as.
const probeName = "status-probe"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == probeName {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("euid=%d\n%s", os.Geteuid(), b)
		os.Exit(0)
	}
	if os.Getenv("NIBRUN_INIT_TEST_ENTER") == "1" && len(os.Args) > 1 && os.Args[1] == enterExecArg {
		enterExec(os.Args[2:])
	}
	if os.Getenv("NIBRUN_INIT_TEST_ENTER") == "1" {
		enterTenant(os.Args[1:])
	}
	os.Exit(m.Run())
}

// statusField is the value of one /proc/PID/status line in out.
func statusField(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestATenantsSetuidRootProgramRunsWithoutPrivilegeAndNoNewPrivs(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	probe := filepath.Join(dir, probeName)
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		_, err = io.Copy(out, in)
		out.Close()
	}
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(probe, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	// The control: started the old way (set ids, nothing else), the
	// set-user-ID bit makes it root here, so the folder honours it.
	plain := exec.Command(probe)
	plain.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: guest.TenantUID, Gid: guest.TenantGID, Groups: []uint32{}}}
	b, err := plain.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(b), "euid=0\n") {
		t.Fatalf("the control did not become root through its set-user-ID bit (is %s mounted nosuid?): %v\n%s", dir, err, b)
	}

	enter := exec.Command(self, "/", dir, probe)
	enter.Env = append(os.Environ(), "NIBRUN_INIT_TEST_ENTER=1")
	b, err = enter.CombinedOutput()
	got := string(b)
	if err != nil {
		t.Fatalf("enter the tenant: %v\n%s", err, got)
	}
	if !strings.HasPrefix(got, "euid=65534\n") {
		t.Errorf("the set-user-ID root program ran as %q, want euid=65534", strings.SplitN(got, "\n", 2)[0])
	}
	for field, want := range map[string]string{
		"Uid":        "65534\t65534\t65534\t65534",
		"Gid":        "65534\t65534\t65534\t65534",
		"Groups":     "",
		"NoNewPrivs": "1",
		"CapInh":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"CapAmb":     "0000000000000000",
	} {
		if v := statusField(got, field); v != want {
			t.Errorf("%s: %q, want %q", field, v, want)
		}
	}
}

func TestATenantThatCannotStartSaysWhyAndExits127(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	enter := exec.Command(self, "/", "/", "/no/such/program")
	enter.Env = append(os.Environ(), "NIBRUN_INIT_TEST_ENTER=1")
	b, err := enter.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 127 || !strings.Contains(string(b), "cannot start /no/such/program") {
		t.Fatalf("a missing program: %v\n%s", err, b)
	}
}
