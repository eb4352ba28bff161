package main

import (
	"bytes"
	"context"
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
)

func TestDevnetWritesItsExportsAndServesUntilStopped(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "devnet.env")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"devnet", "--print-env", "--dir", dir, "--env-file", envFile})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var env []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(envFile); err == nil {
			env = b
			break
		}
	}
	if env == nil {
		cancel()
		t.Fatalf("no env file; stderr: %s", errOut.String())
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || !strings.HasPrefix(line, "export ") {
			t.Fatalf("not an export line: %q", line)
		}
		vars[name] = value
	}
	for _, name := range []string{"ALP_HOST", "ALP_FETCH_ROOT_KEY", "ALP_EXPLORER_URL", "ALP_DASHBOARD_URL", "ALP_KDS_URL", "ALP_IDENTITY", "ALP_NEURON", "ALP_NODE_STATUS_CA"} {
		if vars[name] == "" {
			t.Errorf("%s missing from %s", name, env)
		}
	}
	resp, err := http.Get(vars["ALP_DASHBOARD_URL"] + "/api/v3/proposals?limit=1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("dashboard: %v", err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("devnet did not stop")
	}
	if !strings.Contains(out.String(), "export ALP_IDENTITY=") || strings.Contains(out.String(), "# registry explorer") {
		t.Fatalf("--print-env stdout should hold only exports:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "# registry explorer") {
		t.Fatalf("the description should go to stderr:\n%s", errOut.String())
	}
	host := regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+$`)
	if !host.MatchString(vars["ALP_HOST"]) || !strings.Contains(errOut.String(), "# IC HTTP interface   "+vars["ALP_HOST"]+"\n") {
		t.Fatalf("the IC HTTP interface URL %q is not printed as http://127.0.0.1:PORT:\n%s", vars["ALP_HOST"], errOut.String())
	}
}

// TestEvalOfPrintEnvReturnsWhileTheDevnetKeepsServing runs the documented
// shell use, eval "$(alp devnet --print-env &)", in a real shell: the command
// substitution must end once the exports are printed (alp closes its stdout),
// and the devnet must still answer at the exported address afterwards.
func TestEvalOfPrintEnvReturnsWhileTheDevnetKeepsServing(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no POSIX shell")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	t.Cleanup(func() { stopHelper(pidFile) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := `eval "$("$0" -test.run='^TestDevnetHelperProcess$' -- devnet --print-env --dir "$1/devnet" 2>"$1/log" &)"; printf '%s\n' "$ALP_HOST"`
	sh := exec.CommandContext(ctx, "sh", "-c", script, os.Args[0], dir)
	sh.Env = append(os.Environ(), "ALP_DEVNET_HELPER_PIDFILE="+pidFile)
	out, err := sh.Output()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("eval did not return: %v\n%s", err, log)
	}
	host := strings.TrimSpace(string(out))
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+$`).MatchString(host) {
		t.Fatalf("ALP_HOST after eval = %q", host)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(host + "/api/v2/status")
	if err != nil {
		t.Fatalf("the devnet stopped serving after eval: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status: %s", resp.Status)
	}
}

// TestDevnetHelperProcess is not a test: it is alp, run by
// TestEvalOfPrintEnvReturnsWhileTheDevnetKeepsServing through the test binary
// with the arguments after "--". It serves at most a minute.
func TestDevnetHelperProcess(t *testing.T) {
	pidFile := os.Getenv("ALP_DEVNET_HELPER_PIDFILE")
	if pidFile == "" {
		return
	}
	var args []string
	for i, a := range os.Args {
		if a == "--" {
			args = os.Args[i+1:]
			break
		}
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := newRootCmd()
	root.SetArgs(args)
	code := 0
	if err := root.ExecuteContext(ctx); err != nil {
		code = 1
	}
	cancel()
	os.Exit(code)
}

// stopHelper interrupts the helper process named in pidFile and waits a
// little for it to go.
func stopHelper(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil || pid <= 1 {
		return
	}
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
}
