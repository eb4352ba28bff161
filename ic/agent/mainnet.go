package agent

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"alpnib.dev/ic/certificate"
)

// mainnetDomains are the IC mainnet's API domains; each serves the network
// whose root key is certificate.MainnetRootKeyDER, as do their subdomains
// (<canister>.icp0.io).
var mainnetDomains = []string{"icp-api.io", "ic0.app", "icp0.io"}

// ErrMainnetRootKey: a mainnet host was given a root key other than the
// mainnet constant, or asked to fetch one.
var ErrMainnetRootKey = errors.New("mainnet root key")

// IsMainnetHost reports whether host (a name, without port) is one of the
// mainnet API domains or a subdomain of one.
func IsMainnetHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range mainnetDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// checkMainnetRootKey refuses, for a mainnet host, to fetch the root key or
// to use any key but the mainnet constant: whoever answers /api/v2/status
// would otherwise choose whom the agent trusts. It runs in New, before any
// connection is made.
func checkMainnetRootKey(host string, cfg Config) error {
	if !IsMainnetHost(host) {
		return nil
	}
	if cfg.FetchRootKey {
		return fmt.Errorf("%w: %s is an IC mainnet host; its root key is the mainnet constant and is never fetched (fetch_root_key must be off)", ErrMainnetRootKey, host)
	}
	if cfg.RootKey != nil && !bytes.Equal(cfg.RootKey, certificate.MainnetRootKeyDER()) {
		return fmt.Errorf("%w: %s is an IC mainnet host; only the mainnet root key is accepted for it", ErrMainnetRootKey, host)
	}
	return nil
}
