package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/nns"
	"alpnib.dev/internal/term"
)

// liveFlags point a command at the third-party services it reads besides
// the IC itself.
type liveFlags struct {
	explorerURL, dashboardURL string
}

func (l *liveFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&l.explorerURL, "explorer-url", "", "registry explorer (third party): flag > $"+source.ExplorerURLEnv+" > "+source.MainnetExplorerURL)
	cmd.Flags().StringVar(&l.dashboardURL, "dashboard-url", "", "ICP dashboard (third party): flag > $"+source.DashboardURLEnv+" > "+source.MainnetDashboardURL)
}

func (l liveFlags) explorer() *source.Explorer {
	return source.NewExplorer(source.URL(l.explorerURL, source.ExplorerURLEnv, source.MainnetExplorerURL), nil)
}

func (l liveFlags) dashboard() *source.Dashboard {
	return source.NewDashboard(source.URL(l.dashboardURL, source.DashboardURLEnv, source.MainnetDashboardURL), nil)
}

// readAgent is an anonymous agent for queries against the resolved host
// (newAgent says how it is trusted); progress is where a warning goes.
func (g *globals) readAgent(ctx context.Context, cfg *config.Config, progress io.Writer) (*agent.Agent, state.Network, error) {
	return g.newAgent(ctx, cfg, nil, progress)
}

// newAgent is the agent every command talks to the IC through, as id (nil
// for anonymous), once connect has reached its host and said on progress
// which network it is. The root key is fetched on any host but mainnet
// (resolveFetchRootKey); for a mainnet host a fetched or foreign key is
// refused by agent.New before anything is dialled, whatever
// $ALP_FETCH_ROOT_KEY or provider.fetch_root_key say. Query answers are
// verified against the subnet's certified node keys unless
// --no-verify-queries, and then a warning on progress says so.
func (g *globals) newAgent(ctx context.Context, cfg *config.Config, id identity.Identity, progress io.Writer) (*agent.Agent, state.Network, error) {
	host, from := g.resolveHost(cfg)
	if err := checkFetchRootKeyEnv(); err != nil {
		return nil, state.Network{Host: host, From: from}, err
	}
	// Each 429 or 503 the agent rides out is said on progress, numbered.
	var mu sync.Mutex
	onRetry := func(r agent.Retry) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(progress, term.For(progress).Paint(term.Yellow, "retry: ")+r.String())
	}
	fetch := resolveFetchRootKey(cfg, host)
	a, err := agent.New(agent.Config{URL: host, Identity: id, FetchRootKey: fetch, SkipQuerySignatures: g.noVerifyQueries, OnRetry: onRetry})
	if err != nil {
		return nil, state.Network{Host: host, From: from}, fmt.Errorf("the host from %s: %w", from, err)
	}
	n, err := connect(ctx, a, host, from, fetch, progress)
	if err != nil {
		return nil, n, err
	}
	if g.noVerifyQueries {
		fmt.Fprintln(progress, term.For(progress).Paint(term.Yellow, "warning: ")+"query answers from "+host+" are not verified (--no-verify-queries): a boundary node or anyone on the path could change what is read")
	}
	return a, n, nil
}

// preflightFetcher wires the preflight's reads to the live services: the
// registry and governance through an anonymous agent, the explorer and
// dashboard through their HTTP clients, each node's own status endpoint
// through a node status client.
func (g *globals) preflightFetcher(ctx context.Context, cfg *config.Config, l liveFlags, progress io.Writer) (*preflight.Fetcher, state.Network, error) {
	a, n, err := g.readAgent(ctx, cfg, progress)
	if err != nil {
		return nil, n, err
	}
	ns, err := nodeHealthClient()
	if err != nil {
		return nil, n, err
	}
	return &preflight.Fetcher{
		Registry:   nns.RegistryClient{Caller: a},
		Governance: nns.GovernanceClient{Caller: a},
		Explorer:   l.explorer(),
		Dashboard:  l.dashboard(),
		NodeStatus: ns,
	}, n, nil
}

// nodeHealthClient reads a node's own health for preflight, its
// certificate checked against $ALP_NODE_STATUS_CA when set.
func nodeHealthClient() (*source.NodeStatus, error) {
	return source.NewNodeStatusTimeout(os.Getenv(source.NodeStatusCAEnv), 0)
}
