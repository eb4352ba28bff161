package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/kinds"
)

func loadResourcesText(t *testing.T, text string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadResources(dir)
}

const hostosFleet = `
node_provider "np" {
  id = "2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"
}
node_operator "ops" {
  id                   = "u5p45-2gjxs-56yrl-7uif6-lovs7-dkfck-cgymc-tplna-2cuoz-tyjbh-gae"
  provider             = node_provider.np.id
  dc                   = "zh1"
  node_allowance       = 3
  rewardable_nodes     = { "type3.1" = 4, "type1.1" = 2 }
  max_rewardable_nodes = { "type3.1" = 5 }
  ipv6                 = "2001:db8:0:0:0:0:0:1"
}
hostos_version "current" {
  id      = "aaaa"
  default = true
}
hostos_version "next" {
  id = "bbbb"
}
node "inherits" {
  id       = "kj5am-xco6a-pfwgh-2xiym-32xzp-d2e5e-m5jtt-tetho-2faxm-zmq7z-iae"
  operator = node_operator.ops.id
}
node "overrides" {
  id             = "sbccz-rkvsk-kd3uc-5eyzl-3khte-fxvg6-6wdpe-iw5wx-k7dtf-ye5s6-iae"
  operator       = node_operator.ops.id
  hostos_version = hostos_version.next.id
}
node "opts_out" {
  id             = "g36rd-weygn-fjzmy-2i5bu-ni5tt-rywcb-q4opg-kv3kb-2k7s3-35yau-yqe"
  operator       = node_operator.ops.id
  hostos_version = "none"
}
`

// A node's HostOS version works like its GuestOS one: its own, else the
// default's, and "none" opts it out; the operator's new fields decode, an
// omitted one is told from a declared one.
func TestANodesHostOSVersionInheritsTheDefaultAndTheOperatorsFieldsDecode(t *testing.T) {
	cfg, err := loadResourcesText(t, hostosFleet)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resources
	want := map[string]struct {
		hostos   string
		override bool
	}{"inherits": {"aaaa", false}, "overrides": {"bbbb", true}, "opts_out": {"", false}}
	for _, n := range r.Nodes {
		if w := want[n.Name]; n.HostOS != w.hostos || n.HostOSOverride != w.override {
			t.Errorf("node %s: HostOS %q override %v, want %q %v", n.Name, n.HostOS, n.HostOSOverride, w.hostos, w.override)
		}
	}
	o := r.NodeOperators[0]
	if o.NodeAllowance == nil || *o.NodeAllowance != 3 || o.RewardableNodes["type3.1"] != 4 || o.RewardableNodes["type1.1"] != 2 ||
		o.MaxRewardableNodes["type3.1"] != 5 || o.IPv6 == nil || *o.IPv6 != "2001:db8:0:0:0:0:0:1" {
		t.Fatalf("operator %+v", o)
	}
	bare, err := loadResourcesText(t, `node_operator "ops" {
  id = "u5p45-2gjxs-56yrl-7uif6-lovs7-dkfck-cgymc-tplna-2cuoz-tyjbh-gae"
}`)
	if err != nil {
		t.Fatal(err)
	}
	if o := bare.Resources.NodeOperators[0]; o.NodeAllowance != nil || o.RewardableNodes != nil || o.MaxRewardableNodes != nil || o.IPv6 != nil {
		t.Fatalf("an operator that names none of the fields has %+v", o)
	}
}

func TestTheLoaderRefusesTwoHostOSDefaultsANameForAnIdAndAShortIPv6(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{"  id = \"bbbb\"\n}", "  id = \"bbbb\"\n  default = true\n}", "Two default HostOS versions"},
		{"hostos_version = hostos_version.next.id", `hostos_version = "next"`, "HostOS version name, not id"},
		{`ipv6                 = "2001:db8:0:0:0:0:0:1"`, `ipv6 = "2001:db8::1"`, "IPv6 address not in the registry's format"},
	} {
		text := strings.Replace(hostosFleet, c.old, c.new, 1)
		if text == hostosFleet {
			t.Fatalf("%q is not in the fleet", c.old)
		}
		if _, err := loadResourcesText(t, text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.new, err, c.want)
		}
	}
}

// A deploy_hostos naming a hostos_version block where its id belongs is
// refused at the attribute, as deploy_guestos's replica_version_id is.
func TestADeployHostOSNamingAVersionBlockInsteadOfItsIdIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(hostosFleet), 0o644); err != nil {
		t.Fatal(err)
	}
	proposals := filepath.Join(dir, "proposals.hcl")
	write := func(version string) {
		text := "proposal \"p\" {\n  kind  = \"deploy_hostos\"\n  title = \"Move a node\"\n  deploy_hostos {\n    hostos_version_id = " + version + "\n    node { id = node.inherits.id }\n  }\n}\n"
		if err := os.WriteFile(proposals, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`"next"`)
	if _, err := Load(proposals); err == nil || !strings.Contains(err.Error(), "HostOS version name, not id") || !strings.Contains(err.Error(), "hostos_version.next.id") {
		t.Fatalf("a block name as the version: %v", err)
	}
	write("hostos_version.next.id")
	cfg, err := Load(proposals)
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Proposal("p").Body.(*kinds.DeployHostOS); b.HostOSVersionID != "bbbb" {
		t.Fatalf("the reference resolved to %q", b.HostOSVersionID)
	}
}
