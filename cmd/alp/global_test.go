package main

import (
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
)

func withProvider(host string, neuron uint64, fetch *bool) *config.Config {
	return &config.Config{Provider: &config.Provider{Host: host, Neuron: &neuron, FetchRootKey: fetch}}
}

func TestTheHostComesFromTheFlagThenTheEnvironmentThenTheProviderThenMainnet(t *testing.T) {
	cfg := withProvider("http://provider", 1, nil)
	t.Setenv("ALP_HOST", "http://env")
	if got, _ := (&globals{host: "http://flag"}).resolveHost(cfg); got != "http://flag" {
		t.Errorf("with a flag: %s", got)
	}
	if got, _ := (&globals{}).resolveHost(cfg); got != "http://env" {
		t.Errorf("with $ALP_HOST: %s", got)
	}
	t.Setenv("ALP_HOST", "")
	if got, _ := (&globals{}).resolveHost(cfg); got != "http://provider" {
		t.Errorf("with provider.host: %s", got)
	}
	if got, _ := (&globals{}).resolveHost(&config.Config{}); got != MainnetHost {
		t.Errorf("with nothing: %s", got)
	}
}

func TestTheNeuronComesFromTheFlagThenTheEnvironmentThenTheProvider(t *testing.T) {
	cfg := withProvider("", 7, nil)
	t.Setenv("ALP_NEURON", "8")
	if n, ok, err := (&globals{neuron: "9"}).resolveNeuron(cfg); n != 9 || !ok || err != nil {
		t.Errorf("flag: %d %v %v", n, ok, err)
	}
	if n, _, _ := (&globals{}).resolveNeuron(cfg); n != 8 {
		t.Errorf("env: %d", n)
	}
	t.Setenv("ALP_NEURON", "")
	if n, _, _ := (&globals{}).resolveNeuron(cfg); n != 7 {
		t.Errorf("provider: %d", n)
	}
	if _, ok, _ := (&globals{}).resolveNeuron(&config.Config{}); ok {
		t.Error("no neuron anywhere, yet one was found")
	}
	if _, _, err := (&globals{neuron: "twelve"}).resolveNeuron(cfg); err == nil {
		t.Error("a non-numeric neuron was accepted")
	}
}

func TestTheRootKeyIsFetchedForAnyHostButMainnetUnlessTheEnvironmentOrTheProviderSays(t *testing.T) {
	t.Setenv("ALP_FETCH_ROOT_KEY", "")
	if resolveFetchRootKey(&config.Config{}, MainnetHost) {
		t.Error("mainnet root key fetched")
	}
	if !resolveFetchRootKey(&config.Config{}, "http://127.0.0.1:1") {
		t.Error("local host root key not fetched")
	}
	no, yes := false, true
	if resolveFetchRootKey(withProvider("", 1, &no), "http://127.0.0.1:1") {
		t.Error("provider.fetch_root_key = false ignored")
	}
	if !resolveFetchRootKey(withProvider("", 1, &yes), MainnetHost) {
		t.Error("provider.fetch_root_key = true ignored")
	}
	// a devnet's exports win over a proposals.hcl written for mainnet
	t.Setenv("ALP_FETCH_ROOT_KEY", "true")
	if !resolveFetchRootKey(withProvider(MainnetHost, 1, &no), "http://127.0.0.1:1") {
		t.Error("$ALP_FETCH_ROOT_KEY=true lost to provider.fetch_root_key = false")
	}
}

func TestAHostThatIsNoURLIsRefusedNamingWhereItCameFrom(t *testing.T) {
	t.Setenv("ALP_HOST", "")
	if _, err := execute(t, "plan", "--config", fixture, "--host", "icp-api.io"); err == nil || !strings.Contains(err.Error(), "the host from --host") {
		t.Errorf("--host icp-api.io: %v", err)
	}
	t.Setenv("ALP_HOST", "127.0.0.1:8080")
	if _, err := execute(t, "plan", "--config", fixture); err == nil || !strings.Contains(err.Error(), "the host from $ALP_HOST") {
		t.Errorf("ALP_HOST=127.0.0.1:8080: %v", err)
	}
}

func TestAFetchRootKeyVariableThatIsNoBooleanIsRefusedByName(t *testing.T) {
	t.Setenv("ALP_FETCH_ROOT_KEY", "yes please")
	if _, err := execute(t, "plan", "--config", fixture); err == nil || !strings.Contains(err.Error(), `$ALP_FETCH_ROOT_KEY "yes please" is not true or false`) {
		t.Fatalf("plan with ALP_FETCH_ROOT_KEY=yes please: %v", err)
	}
}
