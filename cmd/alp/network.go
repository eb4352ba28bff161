package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/internal/term"
)

// connectTimeout bounds the first contact with the host: its
// /api/v2/status, which says the network is there and gives its root key.
const connectTimeout = 30 * time.Second

// hostHint is how to choose another network, for an error about one.
const hostHint = "choose another with --host, $ALP_HOST or provider.host"

// connect makes first contact with a's host: GET /api/v2/status (the
// root key, fetched there unless the host is mainnet's, whose key is a
// constant), then says on progress which network the command talks to. A
// host that cannot be reached is one line naming it, where it came from,
// and how to choose another, instead of the dial errors of every read
// after it.
func connect(ctx context.Context, a *agent.Agent, host, from string, fetch bool, progress io.Writer) (state.Network, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var err error
	if fetch {
		err = a.FetchRootKey(ctx)
	} else {
		_, err = a.Status(ctx)
	}
	if err != nil {
		return state.Network{}, unreachable(host, from, err)
	}
	key, err := a.RootKey(ctx)
	if err != nil {
		return state.Network{}, unreachable(host, from, err)
	}
	n := state.NetworkOf(host, key, bytes.Equal(key, certificate.MainnetRootKeyDER()))
	n.From = from
	fmt.Fprintf(progress, "%s %s, from %s\n", term.For(progress).Paint(term.Dim, "network:"), n, from)
	return n, nil
}

// unreachable is the one-line error of a host that did not answer its
// status, with the cause cut to what a person acts on.
func unreachable(host, from string, err error) error {
	return fmt.Errorf("cannot reach %s (from %s): %s; is the network up? %s", host, from, rootCause(err), hostHint)
}

// rootCause is err's innermost reason for a failed dial (refused, no such
// host, unreachable, a timeout), else err itself.
func rootCause(err error) string {
	var dns *net.DNSError
	var errno syscall.Errno
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return fmt.Sprintf("no answer within %s", connectTimeout)
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// bindState ties st, read from g.stateFile(), to the network n: a state
// recorded against another network is refused naming both.
func (g *globals) bindState(st *state.State, n state.Network) error {
	_, err := st.Bind(g.stateFile(), n)
	return err
}

// updateState is state.Update of g.stateFile(), bound to the network n
// first: a file recorded against another network is refused, and one
// that records none is bound to n when change writes it.
func (g *globals) updateState(n state.Network, change func(*state.State) (bool, error)) error {
	return state.Update(g.stateFile(), func(s *state.State) (bool, error) {
		if _, err := s.Bind(g.stateFile(), n); err != nil {
			return false, err
		}
		return change(s)
	})
}
