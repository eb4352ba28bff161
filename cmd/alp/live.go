package main

import (
	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
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

// readAgent is an anonymous agent for queries against the resolved host,
// with the root key fetched on any host but mainnet (resolveFetchRootKey).
func (g *globals) readAgent(cfg *config.Config) (*agent.Agent, string, error) {
	host := g.resolveHost(cfg)
	a, err := agent.New(agent.Config{URL: host, FetchRootKey: resolveFetchRootKey(cfg, host)})
	return a, host, err
}

// preflightFetcher wires the preflight's reads to the live services: the
// registry and governance through an anonymous agent, the explorer and
// dashboard through their HTTP clients.
func (g *globals) preflightFetcher(cfg *config.Config, l liveFlags) (*preflight.Fetcher, string, error) {
	a, host, err := g.readAgent(cfg)
	if err != nil {
		return nil, "", err
	}
	return &preflight.Fetcher{
		Registry:   nns.RegistryClient{Caller: a},
		Governance: nns.GovernanceClient{Caller: a},
		Explorer:   l.explorer(),
		Dashboard:  l.dashboard(),
	}, host, nil
}
