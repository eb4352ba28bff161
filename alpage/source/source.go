// Package source holds alp's clients of the third-party services it reads
// besides the NNS itself: the registry explorer (registry.aviatelabs.co)
// and the ICP dashboard (ic-api.internetcomputer.org). Neither is
// authoritative — the registry canister is — so every fact they give is
// labelled with its source in alp's output (Label), and a failure to read
// one degrades a check rather than failing the command. Base URLs come
// from flags or $ALP_EXPLORER_URL / $ALP_DASHBOARD_URL so alp can be
// pointed at `alp devnet`.
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// The mainnet endpoints and the variables that override them.
const (
	MainnetExplorerURL  = "https://registry.aviatelabs.co"
	MainnetDashboardURL = "https://ic-api.internetcomputer.org"
	ExplorerURLEnv      = "ALP_EXPLORER_URL"
	DashboardURLEnv     = "ALP_DASHBOARD_URL"
)

// Labels name a source in output, so a reader knows which facts came from
// a third party rather than the registry canister.
const (
	ExplorerLabel  = "per registry explorer"
	DashboardLabel = "via ICP dashboard"
)

// DefaultTimeout bounds each request when the caller's context has no
// earlier deadline.
const DefaultTimeout = 15 * time.Second

// maxBody caps a response body; the largest we read is a page of 100
// proposals with their summaries.
const maxBody = 16 << 20

// ErrNotFound is a 404: the service does not know the thing asked about.
var ErrNotFound = errors.New("not found")

// URL picks a base URL: flag, else the environment variable, else the
// mainnet default.
func URL(flag, env, mainnet string) string {
	switch {
	case flag != "":
		return strings.TrimRight(flag, "/")
	case os.Getenv(env) != "":
		return strings.TrimRight(os.Getenv(env), "/")
	}
	return mainnet
}

// client is the HTTP part both services share.
type client struct {
	base    string
	http    *http.Client
	timeout time.Duration
}

func newClient(base string, hc *http.Client) client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return client{base: strings.TrimRight(base, "/"), http: hc, timeout: DefaultTimeout}
}

// getJSON GETs base+path into v; a 404 is ErrNotFound.
func (c client) getJSON(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", c.base+path, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", c.base+path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("GET %s: read body: %w", c.base+path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("GET %s: %w", c.base+path, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: %s: %s", c.base+path, resp.Status, firstLine(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: decode: %w", c.base+path, err)
	}
	return nil
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
