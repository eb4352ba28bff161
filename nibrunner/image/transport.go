package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// errStall is a registry that sent nothing for the stall timeout.
var errStall = errors.New("the registry sent nothing within the stall timeout")

// guard is the pull's HTTP transport: plain HTTP only to the registries
// allowed it (all on loopback), and a stall timer that ends a request
// when no response or no body byte arrives for stall.
type guard struct {
	base  http.RoundTripper
	plain map[string]bool
	stall time.Duration
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	// go-containerregistry pings over HTTP too for a registry it guesses
	// local (localhost, 127.x, RFC 1918); only the ones named may answer.
	if req.URL.Scheme != "https" && !g.plain[req.URL.Host] {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing plain HTTP to %s: only loopback registries named as plain HTTP are reached without TLS", req.URL.Host)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(g.stall, func() { cancel(errStall) })
	resp, err := g.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		if errors.Is(context.Cause(ctx), errStall) {
			err = fmt.Errorf("%w (%v)", errStall, g.stall)
		}
		cancel(nil)
		return nil, err
	}
	timer.Reset(g.stall)
	resp.Body = &stallBody{rc: resp.Body, timer: timer, stall: g.stall, ctx: ctx, cancel: cancel}
	return resp, nil
}

type stallBody struct {
	rc     io.ReadCloser
	timer  *time.Timer
	stall  time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.stall)
	}
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), errStall) {
		err = fmt.Errorf("%w (%v)", errStall, b.stall)
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
