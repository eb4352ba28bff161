package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
)

// MainnetHost is the IC HTTP interface alp talks to when nothing else is
// configured.
const MainnetHost = "https://icp-api.io"

// globals are the flags every command shares.
type globals struct {
	configPath string
	statePath  string
	host       string
	neuron     string
	// maxConfigBytes bounds each configuration file read.
	maxConfigBytes int64
	// noVerifyQueries skips the check of query answers' node signatures.
	noVerifyQueries bool
}

func (g *globals) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.configPath, "config", "proposals.hcl", "proposals file; resources.hcl and resources/*.hcl are read beside it")
	f.StringVar(&g.statePath, "state", "", "state file (default: state.json in --config's folder)")
	f.StringVar(&g.host, "host", "", "IC HTTP interface (governance host): flag > $ALP_HOST > provider.host > "+MainnetHost)
	f.StringVar(&g.neuron, "neuron", "", "proposer neuron id: flag > $ALP_NEURON > provider.neuron")
	f.Int64Var(&g.maxConfigBytes, "max-config-bytes", config.DefaultMaxFileBytes, "refuse a configuration file larger than this many bytes")
	f.BoolVar(&g.noVerifyQueries, "no-verify-queries", false, "do not check the node signatures on query answers (every command says so when set)")
}

func (g *globals) limits() config.Limits { return config.Limits{MaxFileBytes: g.maxConfigBytes} }

func (g *globals) loadConfig() (*config.Config, error) {
	return config.LoadWith(g.configPath, g.limits())
}

// loadResourcesConfig is loadConfig for a command that reads only the
// resources (reconcile): when the proposals file does not exist but
// resources do beside it (resources.hcl, resources/*.hcl or both), the
// resources are loaded alone, so a repository that declares a fleet and
// makes no proposals can still run the gate. Any other failure is
// loadConfig's.
func (g *globals) loadResourcesConfig(progress io.Writer) (*config.Config, error) {
	dir := filepath.Dir(g.configPath)
	if _, err := os.Stat(g.configPath); errors.Is(err, fs.ErrNotExist) {
		var found []string // as the note names them: resources.hcl, resources/*.hcl
		for _, f := range config.ResourceFiles(dir) {
			if filepath.Dir(f) != dir {
				f = filepath.Join(dir, "resources", "*.hcl")
			}
			if !slices.Contains(found, f) {
				found = append(found, f)
			}
		}
		if len(found) > 0 {
			fmt.Fprintf(progress, "no %s: reading %s alone\n", g.configPath, strings.Join(found, " and "))
			return config.LoadResourcesWith(dir, g.limits())
		}
	}
	return g.loadConfig()
}

// stateFile is --state, else state.json beside --config: the state
// belongs to the declaration it records, wherever alp is run from, as the
// resource files beside --config do.
func (g *globals) stateFile() string {
	if g.statePath != "" {
		return g.statePath
	}
	return filepath.Join(filepath.Dir(g.configPath), "state.json")
}

func (g *globals) loadState() (*state.State, error) {
	return state.Load(g.stateFile())
}

// load reads the configuration and then state.json, what every command
// that relates declared proposals to recorded ones starts with.
func (g *globals) load() (*config.Config, *state.State, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	st, err := g.loadState()
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// resolveHost applies the precedence flag > $ALP_HOST > provider.host >
// mainnet, and names where the host came from, for an error about it: the
// flag, the variable, or provider.host and its place.
func (g *globals) resolveHost(c *config.Config) (host, from string) {
	switch {
	case g.host != "":
		return g.host, "--host"
	case os.Getenv("ALP_HOST") != "":
		return os.Getenv("ALP_HOST"), "$ALP_HOST"
	case c != nil && c.Provider != nil && c.Provider.Host != "":
		return c.Provider.Host, fmt.Sprintf("provider.host (%s:%d)", c.Provider.Range.Filename, c.Provider.Range.Start.Line)
	}
	return MainnetHost, "the default host"
}

// resolveNeuron applies flag > $ALP_NEURON > provider.neuron; ok is false
// when no neuron is configured anywhere.
func (g *globals) resolveNeuron(c *config.Config) (id uint64, ok bool, err error) {
	for _, s := range []struct{ from, v string }{{"--neuron", g.neuron}, {"$ALP_NEURON", os.Getenv("ALP_NEURON")}} {
		if s.v == "" {
			continue
		}
		n, err := strconv.ParseUint(s.v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s %q is not a neuron id (a decimal number)", s.from, s.v)
		}
		return n, true, nil
	}
	if c != nil && c.Provider != nil && c.Provider.Neuron != nil {
		return *c.Provider.Neuron, true, nil
	}
	return 0, false, nil
}

// checkFetchRootKeyEnv refuses a $ALP_FETCH_ROOT_KEY that is set but is no
// boolean, which resolveFetchRootKey would otherwise pass over in silence
// and take provider.fetch_root_key or the default instead.
func checkFetchRootKeyEnv() error {
	if v := os.Getenv("ALP_FETCH_ROOT_KEY"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("$ALP_FETCH_ROOT_KEY %q is not true or false; set one of them, or unset it to let provider.fetch_root_key or the host decide", v)
		}
	}
	return nil
}

// resolveFetchRootKey: $ALP_FETCH_ROOT_KEY, else provider.fetch_root_key,
// else true for any host but mainnet (icp-api.io, ic0.app, icp0.io and
// their subdomains, agent.IsMainnetHost). The environment comes first for
// the same reason $ALP_HOST beats provider.host: `eval "$(alp devnet
// --print-env)"` points alp at a local network whatever proposals.hcl says,
// and that network's root key must be fetched. For a mainnet host a true
// here is refused by agent.New, naming the root key.
func resolveFetchRootKey(c *config.Config, host string) bool {
	if v, err := strconv.ParseBool(os.Getenv("ALP_FETCH_ROOT_KEY")); err == nil {
		return v
	}
	if c != nil && c.Provider != nil && c.Provider.FetchRootKey != nil {
		return *c.Provider.FetchRootKey
	}
	u, err := agent.ParseURL(host)
	return err != nil || !agent.IsMainnetHost(u.Hostname())
}

// outputFlag adds --output to a reporting command.
func outputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "text", "output format: text or json")
}

// flagged is the exit status 2 error: the report was printed and it found
// something (drift, a flagged plan).
func flagged(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}
