package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// ErrNoDaemon is returned when nothing listens on the control socket.
var ErrNoDaemon = errors.New("no daemon")

// Client talks to a daemon's control socket.
type Client struct {
	Socket string
	http   *http.Client
}

// NewClient returns a client of the daemon listening on socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{Socket: socket, http: &http.Client{Transport: tr}}
}

// Report returns the daemon's reported.json.
func (c *Client) Report(ctx context.Context) ([]byte, error) {
	return c.do(ctx, http.MethodGet, "/v1/report")
}

// Sleep asks the daemon to put app to sleep now.
func (c *Client) Sleep(ctx context.Context, app string) error {
	_, err := c.do(ctx, http.MethodPost, "/v1/apps/"+url.PathEscape(app)+"/sleep")
	return err
}

// Wake asks the daemon to wake app and returns once it is healthy.
func (c *Client) Wake(ctx context.Context, app string) error {
	_, err := c.do(ctx, http.MethodPost, "/v1/apps/"+url.PathEscape(app)+"/wake")
	return err
}

func (c *Client) do(ctx context.Context, method, path string) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 6*time.Minute)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://nibrunnerd"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("no nibrunnerd is listening on %s; start it with nibrunnerd serve: %w", c.Socket, ErrNoDaemon)
		}
		if errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%s is only for the user the daemon runs as (root); run this as that user: %w", c.Socket, err)
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return body, nil
}
