package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/principal"
)

// Config says where and as whom an Agent talks. Only URL is required.
type Config struct {
	// URL is the boundary node or replica, e.g. "https://icp-api.io".
	URL string
	// Identity signs requests; the anonymous identity when nil.
	Identity identity.Identity
	// RootKey is the DER root key certificates are checked against. When nil
	// the mainnet key is used, unless FetchRootKey is set. For a mainnet host
	// (see IsMainnetHost) only the mainnet key is accepted.
	RootKey []byte
	// FetchRootKey takes the root key from /api/v2/status on first use. Only
	// for local or test replicas: on mainnet it would trust the network to
	// say whom to trust, so New refuses it for a mainnet host.
	FetchRootKey bool
	// HTTPClient is http.DefaultClient when nil.
	HTTPClient *http.Client
	// Timeout bounds each HTTP exchange; 30s when zero. The caller's context
	// bounds the whole operation, polling included.
	Timeout time.Duration
	// IngressExpiry is how far ahead requests expire; 3 minutes when zero.
	// The IC refuses more than 5 minutes.
	IngressExpiry time.Duration
	// Now is the clock for ingress expiry and certificate freshness;
	// time.Now when nil.
	Now func() time.Time
	// CertificateMaxAge is the freshness window for certificates;
	// certificate.DefaultMaxAge when zero.
	CertificateMaxAge time.Duration
	// PollInterval and MaxPollInterval shape the backoff while waiting for a
	// call's result; 100ms and 2s when zero.
	PollInterval, MaxPollInterval time.Duration
	// Rand supplies nonces; crypto/rand when nil.
	Rand io.Reader
	// MaxResponseBytes caps a response body; 32 MiB when zero.
	MaxResponseBytes int64
	// SkipQuerySignatures turns off the check of query answers. By default
	// the node signatures on every query answer are checked against node keys
	// certified by the subnet (read once per canister and cached while
	// fresh), as mainnet signs every query answer; only a replica that does
	// not sign its answers needs this set.
	SkipQuerySignatures bool
	// MaxRetries bounds how often one request is sent again after a 429 or
	// 503 (see Retry); 4 when zero, none when negative. RetryBase is the
	// first wait, doubling after each retry (250 ms when zero); no wait is
	// longer than MaxRetryWait (10 s when zero), and an answer whose
	// Retry-After asks for longer is returned as it is.
	MaxRetries              int
	RetryBase, MaxRetryWait time.Duration
	// OnRetry, when set, hears of each retry before its wait.
	OnRetry func(Retry)
}

// Agent is a client of one IC endpoint. It is safe for concurrent use.
type Agent struct {
	cfg  Config
	base *url.URL
	id   identity.Identity

	retries atomic.Int64

	mu       sync.Mutex
	verifier *certificate.Verifier
	nodes    nodeKeyCache
	versions hostVersions
}

// ParseURL reads s as the URL of a boundary node or replica, the one rule
// New applies to Config.URL: http or https with a host, trailing slashes
// dropped. Callers that take a URL for an agent (a configuration file, a
// flag) check it with this too, so they refuse what New would.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("agent URL %q: want http(s)://host[:port]", s)
	}
	return u, nil
}

// New checks cfg and returns an agent. It does no I/O: a root key to fetch
// is fetched on first need, or explicitly with FetchRootKey.
func New(cfg Config) (*Agent, error) {
	u, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if err := checkMainnetRootKey(u.Hostname(), cfg); err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.IngressExpiry == 0 {
		cfg.IngressExpiry = 3 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.MaxPollInterval == 0 {
		cfg.MaxPollInterval = 2 * time.Second
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = defaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = defaultRetryBase
	}
	if cfg.MaxRetryWait == 0 {
		cfg.MaxRetryWait = defaultMaxRetryWait
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 32 << 20
	}
	a := &Agent{cfg: cfg, base: u, id: cfg.Identity}
	if a.id == nil {
		a.id = identity.Anonymous{}
	}
	if !cfg.FetchRootKey {
		key := cfg.RootKey
		if key == nil {
			key = certificate.MainnetRootKeyDER()
		}
		if a.verifier, err = a.newVerifier(key); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *Agent) newVerifier(rootKey []byte) (*certificate.Verifier, error) {
	return certificate.NewVerifier(rootKey, certificate.Options{Now: a.cfg.Now, MaxAge: a.cfg.CertificateMaxAge})
}

// Sender is the principal requests are sent as.
func (a *Agent) Sender() principal.Principal { return a.id.Sender() }

// FetchRootKey reads the root key from /api/v2/status and trusts it from now
// on. It is an error unless the Config allowed it.
func (a *Agent) FetchRootKey(ctx context.Context) error {
	if !a.cfg.FetchRootKey {
		return errors.New("fetch root key: not allowed by the agent's configuration")
	}
	st, err := a.Status(ctx)
	if err != nil {
		return fmt.Errorf("fetch root key: %w", err)
	}
	if st.RootKey == nil {
		return errors.New("fetch root key: status has no root_key")
	}
	v, err := a.newVerifier(st.RootKey)
	if err != nil {
		return fmt.Errorf("fetch root key: %w", err)
	}
	a.mu.Lock()
	a.verifier = v
	a.mu.Unlock()
	return nil
}

// RootKey returns the DER root key in use, fetching it first if the Config
// says so.
func (a *Agent) RootKey(ctx context.Context) ([]byte, error) {
	v, err := a.getVerifier(ctx)
	if err != nil {
		return nil, err
	}
	return v.RootKey().DER(), nil
}

func (a *Agent) getVerifier(ctx context.Context) (*certificate.Verifier, error) {
	a.mu.Lock()
	v := a.verifier
	a.mu.Unlock()
	if v != nil {
		return v, nil
	}
	if err := a.FetchRootKey(ctx); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.verifier, nil
}

// expiry is the ingress_expiry of a request made now.
func (a *Agent) expiry() uint64 {
	return uint64(a.cfg.Now().Add(a.cfg.IngressExpiry).Truncate(time.Second).UnixNano())
}

func (a *Agent) nonce() ([]byte, error) {
	n := make([]byte, 16)
	if _, err := io.ReadFull(a.cfg.Rand, n); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return n, nil
}

// sign builds and encodes the envelope for req.
func (a *Agent) sign(req Request) ([]byte, RequestID, error) {
	req.Sender = a.id.Sender()
	env, rid, err := Sign(a.id, req)
	if err != nil {
		return nil, rid, err
	}
	body, err := env.Marshal()
	return body, rid, err
}

// response is one HTTP exchange's outcome.
type response struct {
	status int
	body   []byte
	// retryAfter is the Retry-After header, "" when none.
	retryAfter string
}

// do sends one HTTP request under the per-exchange timeout.
func (a *Agent) do(ctx context.Context, method, path string, body []byte) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	u := a.base.JoinPath(path)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/cbor")
	}
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if int64(len(data)) > a.cfg.MaxResponseBytes {
		return nil, fmt.Errorf("%s %s: response larger than %d bytes", method, path, a.cfg.MaxResponseBytes)
	}
	return &response{status: resp.StatusCode, body: data, retryAfter: resp.Header.Get("Retry-After")}, nil
}

// httpError turns a non-2xx response into an *HTTPError, keeping at most a
// screenful of the body.
func httpError(method, path string, r *response) error {
	body := strings.TrimSpace(string(r.body))
	if len(body) > 512 {
		body = body[:512] + "…"
	}
	return fmt.Errorf("%s %s: %w", method, path, &HTTPError{StatusCode: r.status, Body: body})
}
