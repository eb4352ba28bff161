// Package s3test runs a real S3 server for tests: versitygw over a temporary
// folder, on a free loopback port, with credentials generated per test. A
// test talks to it through the same environment variables the daemon reads
// (NIB_S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), so what it
// proves is the production path, not a fake of it.
//
// versitygw is built with `go install` (scripts/setup.sh). Where it is
// missing a test skips on a developer's machine and fails in the integration
// lane (internal/testenv).
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is one running versitygw.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Dir       string // the folder buckets live in, one subfolder each
	Client    *minio.Client

	bin, addr string
	mu        sync.Mutex
	proc      *os.Process
	exited    chan struct{}
}

// launch starts versitygw on s.addr over s.Dir and waits until it answers.
func (s *Server) launch(t testing.TB) {
	t.Helper()
	var logs bytes.Buffer
	cmd := exec.Command(s.bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.addr, "--quiet",
		"posix", s.Dir)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.proc, s.exited = cmd.Process, exited
	s.mu.Unlock()
	if err := waitAnswering(s.Endpoint, exited, 20*time.Second); err != nil {
		t.Fatalf("start versitygw on %s: %v\n%s", s.addr, err, logs.String())
	}
}

// stop ends the server, if it runs.
func (s *Server) stop() {
	s.mu.Lock()
	proc, exited := s.proc, s.exited
	s.proc = nil
	s.mu.Unlock()
	if proc == nil {
		return
	}
	_ = proc.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = proc.Kill()
		<-exited
	}
}

// Down kills the server, as an outage does: connections are refused until
// Up. What it stored stays.
func (s *Server) Down() {
	s.mu.Lock()
	proc, exited := s.proc, s.exited
	s.proc = nil
	s.mu.Unlock()
	if proc != nil {
		_ = proc.Kill()
		<-exited
	}
}

// Up starts the server again after Down, on the same port and folder.
func (s *Server) Up(t testing.TB) {
	t.Helper()
	s.launch(t)
}

// Command finds the versitygw binary on PATH or in GOPATH/bin.
func Command() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("versitygw is neither on PATH nor in %s (make setup installs it)", filepath.Dir(p))
	}
	return p, nil
}

// Start runs a fresh server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Command()
	if err != nil {
		testenv.Missing(t, err.Error())
		return nil
	}
	s := &Server{Dir: t.TempDir(), AccessKey: "test" + randHex(8), SecretKey: randHex(20)}
	port, err := freePort()
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s.Endpoint, s.bin, s.addr = "http://"+addr, bin, addr
	s.launch(t)
	t.Cleanup(s.stop)
	s.Client, err = minio.New(addr, &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatalf("versitygw client: %v", err)
	}
	return s
}

// Bucket creates a bucket and returns its name.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Client.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// SetEnv points the environment the daemon reads (endpoint, credentials,
// region) at this server for the rest of t.
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	t.Setenv("NIB_S3_ENDPOINT", s.Endpoint)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("NIB_S3_REGION", "us-east-1")
}

func waitAnswering(endpoint string, exited <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			return fmt.Errorf("versitygw exited before answering")
		default:
		}
		resp, err := client.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil // any HTTP answer (403 without a signature) means it serves
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing answered within %s: %w", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
