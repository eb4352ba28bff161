package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ListenConfig is where the proxy listens ([proxy.http] in config.toml).
type ListenConfig struct {
	// Address is host:port.
	Address string
	// CertFile and KeyFile, both or neither, are PEM files; with them the
	// proxy speaks TLS and offers h2.
	CertFile, KeyFile string
	// ReadHeaderTimeout bounds reading a request's headers (default 10 s):
	// a client that trickles them cannot hold a connection for long.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request (default
	// 2 min).
	IdleTimeout time.Duration
}

// Server is the proxy bound to its address, not yet serving.
type Server struct {
	srv *http.Server
	l   net.Listener
	tls bool
}

// Listen binds the proxy's address (so a port in use fails at start,
// before anything else runs) and loads the certificate when there is one.
func (p *Proxy) Listen(ctx context.Context, cfg ListenConfig) (*Server, error) {
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	s := &Server{srv: &http.Server{
		Handler:           p,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
	}}
	// HTTP/1.1 always; h2 over TLS; h2c with prior knowledge (the
	// standard library's, no Upgrade dance) for clients that ask for it.
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	s.srv.Protocols = protos
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("proxy TLS: give both a certificate and a key, or neither")
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load the proxy's TLS certificate: %w", err)
		}
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		s.tls = true
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("proxy listen on %s: %w", cfg.Address, err)
	}
	s.l = noDelayListener{l}
	return s, nil
}

// Addr is the address bound (useful when the port was 0).
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Serve answers requests until ctx ends, then stops accepting and gives
// open requests up to 10 s to finish.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		if s.tls {
			errc <- s.srv.ServeTLS(s.l, "", "")
		} else {
			errc <- s.srv.Serve(s.l)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("proxy: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-errc
	return err
}

// noDelayListener sets TCP_NODELAY on every accepted connection: proxied
// requests are small writes that must not wait on Nagle.
type noDelayListener struct{ net.Listener }

func (l noDelayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}
