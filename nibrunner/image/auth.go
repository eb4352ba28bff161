package image

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
)

// dockerConfig is the part of Docker's config.json this package reads: the
// "auths" map from a registry to its credentials (docker/cli
// cli/config/configfile/file.go, ConfigFile.AuthConfigs, and
// cli/config/types/authconfig.go). credsStore and credHelpers name programs
// to run; they are not used: a host's credentials stay in the one file.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Auth          string `json:"auth"` // base64 of "username:password"
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// keychain answers credentials from a config.json's auths.
type keychain struct {
	auths map[string]authn.AuthConfig
}

// loadAuthFile reads a Docker config.json that only root may read or write:
// a regular file owned by uid 0 with no group or other permission bits.
func loadAuthFile(path string) (*keychain, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("registry credentials %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("registry credentials %s: not a regular file (%s); put the Docker config.json there itself, not a link", path, fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("registry credentials %s: mode %04o lets others than root read it; run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		return nil, fmt.Errorf("registry credentials %s: owned by uid %d, not root; run chown root:root %s", path, st.Uid, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry credentials %s: %w", path, err)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("registry credentials %s: not a Docker config.json: %w", path, err)
	}
	k := &keychain{auths: map[string]authn.AuthConfig{}}
	for key, a := range cfg.Auths {
		ac := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("registry credentials %s: auths[%q].auth is not base64: %w", path, key, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("registry credentials %s: auths[%q].auth is not base64 of user:password", path, key)
			}
			ac.Username, ac.Password = user, pass
		}
		k.auths[registryKey(key)] = ac
	}
	return k, nil
}

// registryKey turns an auths key ("host:port", "https://host/v1/") into the
// registry's host[:port], as docker/cli's ConvertToHostname does; Docker
// Hub's legacy key becomes the host go-containerregistry names it by.
func registryKey(key string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	if h == "docker.io" || h == "registry-1.docker.io" {
		return "index.docker.io"
	}
	return h
}

// Resolve implements authn.Keychain: the registry's credentials, or
// anonymous.
func (k *keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if k == nil {
		return authn.Anonymous, nil
	}
	if ac, ok := k.auths[r.RegistryStr()]; ok {
		return authn.FromConfig(ac), nil
	}
	return authn.Anonymous, nil
}
