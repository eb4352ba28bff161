package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
}
