package store_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// cuttingProxy relays TCP to target, and drops the connection that
// carries the server's byte number cutAt (counted over all connections),
// once: the connection of a read cut partway.
type cuttingProxy struct {
	ln     net.Listener
	target string
	cutAt  int64
	sent   atomic.Int64
	cut    atomic.Bool
	wg     sync.WaitGroup
}

func startCuttingProxy(t *testing.T, target string, cutAt int64) *cuttingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{ln: ln, target: target, cutAt: cutAt}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.relay(c) }()
		}
	}()
	return p
}

func (p *cuttingProxy) relay(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { io.Copy(s, c); s.Close() }()
	buf := make([]byte, 16<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			before := p.sent.Add(int64(n)) - int64(n)
			if before < p.cutAt && before+int64(n) >= p.cutAt && p.cut.CompareAndSwap(false, true) {
				c.Write(buf[:p.cutAt-before])
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0) // a reset, as a dropped link gives
				}
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Against a real S3 server (versitygw), a read whose connection is reset
// partway gets the rest with a ranged request and gives the whole object.
func TestAnS3ReadResetPartwayByTheLinkResumesAgainstARealServer(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "layers")
	direct, err := store.NewS3(ctx(t), "s3://"+bucket+"/p")
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 4<<20)
	for i := range body {
		body[i] = byte(i*31 + i>>9)
	}
	if err := direct.Put(ctx(t), "layer.tar", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	proxy := startCuttingProxy(t, srv.Endpoint[len("http://"):], 1<<20)
	t.Setenv("NIB_S3_ENDPOINT", "http://"+proxy.ln.Addr().String())
	s, err := store.NewS3(ctx(t), "s3://"+bucket+"/p")
	if err != nil {
		t.Fatal(err)
	}
	s.SetRetry(store.Retry{Attempts: 3, Initial: 1, Max: 1, Factor: 1})
	rc, size, err := s.Get(ctx(t), "layer.tar")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %d of %d bytes: %v", len(got), size, err)
	}
	if !proxy.cut.Load() {
		t.Fatal("the proxy never cut the read: the test proves nothing")
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, not the %d put", len(got), len(body))
	}
	if st := s.Stats(); st.Retries != 1 {
		t.Fatalf("stats %+v, want the one retry the cut took", st)
	}
}
