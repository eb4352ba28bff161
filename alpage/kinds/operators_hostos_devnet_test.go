package kinds_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/dryrun"
	"alpnib.dev/alpage/preflight"
)

const (
	zh1Ops       = "u5p45-2gjxs-56yrl-7uif6-lovs7-dkfck-cgymc-tplna-2cuoz-tyjbh-gae"
	exampleProv  = "2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"
	registeredID = "kj5am-xco6a-pfwgh-2xiym-32xzp-d2e5e-m5jtt-tetho-2faxm-zmq7z-iae"
)

// Against a devnet, preflight refuses what the registry or governance
// would, and the dry run, on a local NNS seeded from it, fails the same
// proposals with the registry's words and executes the rest.
func TestPreflightAndTheDryRunRefuseWhatTheRegistryRefusesOnADevnet(t *testing.T) {
	fleet, err := devnet.ParseFleet(devnet.DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	fleet.HostOSVersions = []string{hostos}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, gov := startDevnet(ctx, t, fleet)
	v, err := reg.GetLatestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unknownProvider := "e3zag-db5kj-jrtlj-co2j7-eczxr-5urje-gcynm-k27pg-4jmoq-d52pb-kae"
	fresh := "jk5f6-k2wfg-qxvjt-rmj7d-eub6f-iqxpo-kclif-x7wxs-fc3u2-5kw5d-dqe"
	for _, c := range []struct {
		name, kind, body string
		refused, failure string // "" for none
	}{
		{"a new operator", "add_node_operator", "    node_operator_id = \"" + fresh + "\"\n    node_provider_id = \"" + exampleProv + "\"\n    dc_id = \"zh1\"\n", "", ""},
		{"an operator that exists", "add_node_operator", "    node_operator_id = \"" + zh1Ops + "\"\n    node_provider_id = \"" + exampleProv + "\"\n    dc_id = \"zh1\"\n", "has a record already", "Key already present"},
		{"an unknown provider", "add_node_operator", "    node_operator_id = \"" + fresh + "\"\n    node_provider_id = \"" + unknownProvider + "\"\n    dc_id = \"zh1\"\n", "does not know node provider", "The node provider specified in the payload is not registered"},
		{"a raised allowance", "update_node_operator_config", "    node_operator_id = \"" + zh1Ops + "\"\n    node_allowance = 9\n", "", ""},
		{"an operator with no record", "update_node_operator_config", "    node_operator_id = \"" + fresh + "\"\n    node_allowance = 9\n", "has no record", "not found in the registry"},
		{"an elected HostOS", "deploy_hostos", "    hostos_version_id = \"" + hostos + "\"\n    node {\n      id = \"" + registeredID + "\"\n    }\n", "", ""},
		{"an unelected HostOS", "deploy_hostos", "    hostos_version_id = \"0000\"\n    node {\n      id = \"" + registeredID + "\"\n    }\n", "is not elected", "Could not find HostOS version: 0000"},
		{"an unregistered node", "deploy_hostos", "    hostos_version_id = \"" + hostos + "\"\n    node {\n      id = \"" + fresh + "\"\n    }\n", "is not registered", "not found in the registry"},
	} {
		decl := loadProposal(t, c.kind, c.body)
		r, err := (&preflight.Fetcher{Registry: reg, Governance: gov}).Run(ctx, decl, preflight.Options{})
		if err != nil {
			t.Fatalf("%s: preflight: %v", c.name, err)
		}
		var refused []string
		for _, ch := range r.Checks {
			if ch.Severity == preflight.Refused {
				refused = append(refused, ch.Message)
			}
		}
		if got := strings.Join(refused, "\n"); (c.refused == "") != (got == "") || !strings.Contains(got, c.refused) {
			t.Errorf("%s: preflight refused %q, want %q", c.name, got, c.refused)
		}
		p := build(t, c.kind, c.body)
		seed, err := dryrun.Gather(ctx, dryrun.Live{Registry: reg, Version: v, Governance: gov}, p)
		if err != nil {
			t.Fatalf("%s: seed: %v", c.name, err)
		}
		res, err := dryrun.Run(ctx, seed, p, 1)
		if err != nil {
			t.Fatalf("%s: dry run: %v", c.name, err)
		}
		if c.failure == "" && res.Failed() || c.failure != "" && (!res.Failed() || !strings.Contains(res.FailureReason, c.failure)) {
			t.Errorf("%s: dry run failed %v (%q), want failure %q", c.name, res.Failed(), res.FailureReason, c.failure)
		}
	}
}
