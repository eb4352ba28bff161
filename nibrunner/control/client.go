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
	"strconv"
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

// App returns app's part of the report.
func (c *Client) App(ctx context.Context, app string) (AppStatus, error) {
	var st AppStatus
	b, err := c.do(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(app))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("status of %s: %w", app, err)
	}
	return st, nil
}

// Logs calls each with the last tail lines of each of app's logs (all of
// them when tail < 0), then, when follow, with every new line until ctx
// ends.
func (c *Client) Logs(ctx context.Context, app string, tail int, follow bool, each func(LogLine) error) error {
	q := url.Values{"tail": {strconv.Itoa(tail)}}
	if follow {
		q.Set("follow", "1")
	}
	return stream(c, ctx, "/v1/apps/"+url.PathEscape(app)+"/logs?"+q.Encode(), each)
}

// Events calls each with the events numbered above after, then, when
// follow, with every new one until ctx ends.
func (c *Client) Events(ctx context.Context, after uint64, follow bool, each func(Event) error) error {
	q := url.Values{"after": {strconv.FormatUint(after, 10)}}
	if follow {
		q.Set("follow", "1")
	}
	return stream(c, ctx, "/v1/events?"+q.Encode(), each)
}

// stream reads a newline-delimited JSON answer, one T a line. It ends
// quietly when ctx does.
func stream[T any](c *Client, ctx context.Context, path string, each func(T) error) error {
	resp, err := c.send(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var v T
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("GET %s: %w", path, err)
		}
		if err := each(v); err != nil {
			return err
		}
	}
}

func (c *Client) do(ctx context.Context, method, path string) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 6*time.Minute)
		defer cancel()
	}
	resp, err := c.send(ctx, method, path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return body, nil
}

// send makes one request and returns a 200 answer; any other becomes the
// daemon's error in its own words.
func (c *Client) send(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://nibrunnerd"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.roundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, answerError(resp, method, path)
	}
	return resp, nil
}

// roundTrip makes one request, saying what to do when the socket is not
// there or not this user's.
func (c *Client) roundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("no nibrunnerd is listening on %s; start it with nibrunnerd serve: %w", c.Socket, ErrNoDaemon)
		}
		if errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%s is only for the user the daemon runs as (root); run this as that user: %w", c.Socket, err)
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return resp, nil
}

// answerError is the daemon's error answer in its own words.
func answerError(resp *http.Response, method, path string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return errors.New(e.Error)
	}
	return fmt.Errorf("%s %s: %s", method, path, resp.Status)
}
