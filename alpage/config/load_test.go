package config

import (
	"alpnib.dev/alpage/kinds"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"alpnib.dev/ic/agent"
)

func loadFleet(t *testing.T) *Config {
	t.Helper()
	c, err := Load("testdata/fleet/proposals.hcl")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestAFleetSpreadOverResourceFilesLoadsWithReferencesResolved(t *testing.T) {
	c := loadFleet(t)
	if len(c.Subnets) != 2 || len(c.Nodes) != 3 || len(c.NodeOperators) != 2 || len(c.GuestOSVersions) != 2 {
		t.Fatalf("loaded %d subnets, %d nodes, %d operators, %d versions", len(c.Subnets), len(c.Nodes), len(c.NodeOperators), len(c.GuestOSVersions))
	}
	op := c.NodeOperators[0]
	if op.Provider != "em77e-bvlzu-aq" || op.DC != "zh1" {
		t.Fatalf("operator provider/dc = %q/%q, want the referenced ids", op.Provider, op.DC)
	}
	if n := c.Nodes[0]; n.Subnet != "67htk-vfkxp-gn33q-baibq" || n.Operator != "rwlgt-iiaaa-aaaaa-aaaaa-cai" {
		t.Fatalf("node n1 subnet/operator = %q/%q", n.Subnet, n.Operator)
	}
	m := c.Proposal("add-n2").Body.(*kinds.Membership)
	if m.SubnetID != "67htk-vfkxp-gn33q-baibq" || m.Add[0].ID != "ryjl3-tyaaa-aaaaa-aaaba-cai" || m.Remove[0].ID != "5ffj3-jarcq-lruhj-aemtc-sla" {
		t.Fatalf("membership = %+v", m)
	}
	if d := c.Proposal("upgrade-app1").Body.(*kinds.DeployGuestOS); d.ReplicaVersionID != "2e921c9adfc71f3edc96a9eb5d85fc742e7d8a9f" {
		t.Fatalf("deploy_guestos replica_version_id = %q, want the guestos_version reference resolved", d.ReplicaVersionID)
	}
	if c.Provider == nil || c.Provider.Neuron == nil || *c.Provider.Neuron != 42 {
		t.Fatalf("provider = %+v", c.Provider)
	}
}

func TestUpdateSubnetKeepsOmittedFieldsAbsentAndAnEmptyListPresent(t *testing.T) {
	u := loadFleet(t).Proposal("halt-app1").Body.(*kinds.UpdateSubnet)
	if u.IsHalted == nil || !*u.IsHalted {
		t.Fatal("is_halted = true was not kept")
	}
	if u.HaltAtCupHeight != nil || u.SSHBackupAccess != nil || u.ResourceLimits != nil {
		t.Fatal("an omitted field decoded as present; omitted must stay untouched on-chain")
	}
	if u.SSHReadonlyAccess == nil || len(*u.SSHReadonlyAccess) != 0 {
		t.Fatal("ssh_readonly_access = [] must decode as a present, empty list (it revokes every key)")
	}
	if u.Features == nil || !u.Features.SevEnabled || !u.Features.HTTPRequests {
		t.Fatalf("features = %+v", u.Features)
	}
}

func TestNodesInheritTheDefaultGuestOSVersionUnlessTheyOverrideOrOptOut(t *testing.T) {
	c := loadFleet(t)
	byName := map[string]*Node{}
	for _, n := range c.Nodes {
		byName[n.Name] = n
	}
	if n := byName["n1"]; n.Version != "2e921c9adfc71f3edc96a9eb5d85fc742e7d8a9f" || n.VersionOverride {
		t.Errorf("n1 (no version) = %q override=%v; want the default, not an override", n.Version, n.VersionOverride)
	}
	if n := byName["n2"]; n.Version != "d4ee25b0865e89d3eaac13a60f0016d5e3296b31" || !n.VersionOverride {
		t.Errorf("n2 (own version) = %q override=%v; want its own, marked override", n.Version, n.VersionOverride)
	}
	if n := byName["n3"]; n.Version != "" {
		t.Errorf("n3 (none) = %q; want unchecked", n.Version)
	}
}

func TestADecommissionedProviderDecommissionsItsOperators(t *testing.T) {
	c := loadFleet(t)
	for _, o := range c.NodeOperators {
		want := o.Name == "old"
		if o.Decommissioned != want || o.DecommissionedByProvider != want {
			t.Errorf("operator %s decommissioned=%v byProvider=%v, want %v", o.Name, o.Decommissioned, o.DecommissionedByProvider, want)
		}
	}
}

func TestAHexChipIDDecodesTo64Bytes(t *testing.T) {
	n := loadFleet(t).Nodes[0]
	if len(n.Chip) != 64 || n.Chip[1] != 0x11 {
		t.Fatalf("chip = %x", n.Chip)
	}
}

func TestChipIDAcceptsBase64OfTheSameBytes(t *testing.T) {
	hexForm := strings.Repeat("ab", 64)
	a, err := DecodeChipID(hexForm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeChipID("q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urqw==")
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatal("hex and base64 of the same chip decode differently")
	}
}

// writeFleet lays out a config folder from file name → content.
func writeFleet(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := files["proposals.hcl"]; !ok {
		os.WriteFile(filepath.Join(dir, "proposals.hcl"), nil, 0o644)
	}
	return filepath.Join(dir, "proposals.hcl")
}

// placed is how every load error starts: the file, line and column.
var placed = regexp.MustCompile(`^[^:\s]+\.hcl:\d+:\d+: `)

func TestRefusedConfigurationsNameTheFileLineAndRule(t *testing.T) {
	const subnetA = `subnet "a" { id = "67htk-vfkxp-gn33q-baibq" }` + "\n"
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"duplicate names across files", map[string]string{
			"resources.hcl":      subnetA,
			"resources/more.hcl": `subnet "a" { id = "2vxsx-fae" }`,
		}, []string{"resources/more.hcl:1:", "Duplicate subnet name", "resources.hcl:1", "more.hcl:1"}},
		{"duplicate ids", map[string]string{
			"resources.hcl": subnetA + `subnet "b" { id = "67htk-vfkxp-gn33q-baibq" }`,
		}, []string{"resources.hcl:2:14:", "Duplicate subnet id", `"a" and subnet "b"`, "resources.hcl:1 and", "resources.hcl:2)"}},
		{"duplicate ids written in another case", map[string]string{
			"resources.hcl": subnetA + `subnet "b" { id = "67HTK-VFKXP-GN33Q-BAIBQ" }`,
		}, []string{"resources.hcl:2:14:", "Duplicate subnet id"}},
		{"duplicate node ids across files", map[string]string{
			"resources.hcl":       `node "a" { id = "5ffj3-jarcq-lruhj-aemtc-sla" }`,
			"resources/nodes.hcl": "\n" + `node "b" { id = "5ffj3-jarcq-lruhj-aemtc-sla" }`,
		}, []string{"nodes.hcl:2:12:", "Duplicate node id", "resources.hcl:1 and", "nodes.hcl:2)"}},
		{"an unknown subnet type", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "fiduciary"
}`,
		}, []string{"resources.hcl:3:3:", `type "fiduciary" is not one of`}},
		{"features without sev_enabled", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "update_subnet"
  title = "a title"
  update_subnet {
    subnet_id = subnet.a.id
    features {
      canister_sandboxing = false
      http_requests = true
    }
  }
}`,
		}, []string{"proposals.hcl:6:", `"sev_enabled" is required`}},
		{"resource_limits without maximum_state_delta", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "update_subnet"
  title = "a title"
  update_subnet {
    subnet_id = subnet.a.id
    resource_limits { maximum_state_size = 1 }
  }
}`,
		}, []string{"proposals.hcl:6:", `"maximum_state_delta" is required`}},
		{"remove_node_operators without operators", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_operators"
  title = "a title"
  remove_node_operators {}
}`,
		}, []string{"proposals.hcl:4:", `"operators" is required`}},
		{"a proposal without a title", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_provider"
  remove_node_provider { node_provider_id = "2vxsx-fae" }
}`,
		}, []string{"proposals.hcl:1:", `"title" is required`}},
		{"a reference to a kind nothing declares", map[string]string{
			"resources.hcl": `node "n" {
  id = "5ffj3-jarcq-lruhj-aemtc-sla"
  subnet = subnet.app1.id
}`,
		}, []string{"resources.hcl:3:", "subnet.app1 is not declared (no subnet block is declared; declare subnet \"app1\" in resources.hcl)"}},
		{"a node naming its version by block name", map[string]string{
			"resources.hcl": `guestos_version "current" { id = "f7a20dd476ef99474b4f932fb0a24327bdeb4a67" }
node "n" {
  id = "5ffj3-jarcq-lruhj-aemtc-sla"
  guestos_version = "current"
}`,
		}, []string{"resources.hcl:4:3:", "GuestOS version name, not id", `guestos_version "current" is the name`, "guestos_version = guestos_version.current.id"}},
		{"a deploy naming its version by block name", map[string]string{
			"resources.hcl": subnetA + `guestos_version "current" { id = "f7a20dd476ef99474b4f932fb0a24327bdeb4a67" }`,
			"proposals.hcl": `proposal "p" {
  kind = "deploy_guestos"
  title = "a title"
  deploy_guestos {
    subnet_id = subnet.a.id
    replica_version_id = "current"
  }
}`,
		}, []string{"proposals.hcl:6:5:", "GuestOS version name, not id", "replica_version_id = guestos_version.current.id"}},
		{"a node added twice", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "membership"
  title = "a title"
  membership {
    subnet_id = subnet.a.id
    add { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
    add { id = "5FFJ3-JARCQ-LRUHJ-AEMTC-SLA" }
  }
}`,
		}, []string{"proposals.hcl:7:11:", "Duplicate node", "twice in add", "proposals.hcl:6 and ", "proposals.hcl:7)", "keep one"}},
		{"a node both added and removed", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "membership"
  title = "a title"
  membership {
    subnet_id = subnet.a.id
    add { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
    remove { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
  }
}`,
		}, []string{"proposals.hcl:7:14:", "Contradictory node", "in both add (at ", "proposals.hcl:6) and remove (at ", "proposals.hcl:7)"}},
		{"a node deregistered twice", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_nodes"
  title = "a title"
  remove_nodes {
    node { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
    node { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
  }
}`,
		}, []string{"proposals.hcl:6:12:", "Duplicate node", "twice in remove_nodes"}},
		{"an operator listed twice", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_operators"
  title = "a title"
  remove_node_operators {
    operators = ["2vxsx-fae", "2vxsx-fae"]
  }
}`,
		}, []string{"proposals.hcl:5:5:", "Duplicate operator", "2vxsx-fae twice in operators"}},
		{"a provider host that is no URL", map[string]string{
			"proposals.hcl": `provider {
  host = "icp-api.io"
}`,
		}, []string{"proposals.hcl:2:3:", "Invalid host", `provider.host "icp-api.io"`, "https://host[:port]"}},
		{"a title governance refuses as too short", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_provider"
  title = "fix"
  remove_node_provider { node_provider_id = "2vxsx-fae" }
}`,
		}, []string{"proposals.hcl:3:3:", "Invalid proposal title", "3 bytes", "5 to 256 bytes"}},
		{"a summary governance refuses as too long", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_provider"
  title = "a title"
  summary = "` + strings.Repeat("x", 30001) + `"
  remove_node_provider { node_provider_id = "2vxsx-fae" }
}`,
		}, []string{"proposals.hcl:4:3:", "Invalid proposal summary", "30001 bytes"}},
		{"a url off the forum", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_provider"
  title = "a title"
  url = "https://github.com/dfinity/ic/pull/1"
  remove_node_provider { node_provider_id = "2vxsx-fae" }
}`,
		}, []string{"proposals.hcl:4:3:", "Invalid proposal url", "links to github.com", "https://forum.dfinity.org/t/"}},
		{"undeclared reference", map[string]string{
			"resources.hcl": subnetA + `node "n" {
  id = "5ffj3-jarcq-lruhj-aemtc-sla"
  subnet = subnet.b.id
}`,
		}, []string{"resources.hcl:4:", "subnet.b is not declared", "declared: a"}},
		{"reference against the tiers", map[string]string{
			"resources.hcl": `node "n" { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
node_operator "o" {
  id = "2vxsx-fae"
  dc = node.n.id
}`,
		}, []string{"resources.hcl:4:", "a node_operator cannot refer to a node"}},
		{"not a principal", map[string]string{
			"resources.hcl": `subnet "a" { id = "not-a-principal" }`,
		}, []string{"resources.hcl:1:", `subnet "a": id`}},
		{"cloud engine on the normal schedule", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "cloud_engine"
  cost_schedule = "normal"
}`,
		}, []string{"must be on the free schedule"}},
		{"free schedule on a system subnet", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "system"
  cost_schedule = "free"
}`,
		}, []string{"only for application or cloud_engine"}},
		{"admins on a normal application subnet", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  admins = ["aaaaa-aa"]
}`,
		}, []string{"admins are allowed only on a cloud_engine or a rented subnet"}},
		{"eleven admins", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "cloud_engine"
  admins = [` + strings.Repeat(`"aaaaa-aa",`, 11) + `]
}`,
		}, []string{"declares 11 admins; at most 10"}},
		{"a Nakamoto minimum of an attribute dre does not score", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  min_nakamoto_coefficients = { node_provider = 5, operator = 3 }
}`,
		}, []string{`names "operator", which is not one of node_provider, data_center, data_center_owner, country`}},
		{"replace on a node in no subnet", map[string]string{
			"resources.hcl": `node "n" {
  id      = "67htk-vfkxp-gn33q-baibq"
  replace = true
}`,
		}, []string{`node "n": replace = true marks a subnet member for replacement, but the node is declared in no subnet`}},
		{"a negative Nakamoto minimum", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  min_nakamoto_coefficients = { country = -1 }
}`,
		}, []string{"min_nakamoto_coefficients.country is -1"}},
		{"two defaults", map[string]string{
			"resources.hcl": `guestos_version "a" {
  id = "aa"
  default = true
}
guestos_version "b" {
  id = "bb"
  default = true
}`,
		}, []string{"resources.hcl:7:3:", "both marked default", "resources.hcl:3)", "resources.hcl:7)"}},
		{"chip id of the wrong length", map[string]string{
			"resources.hcl": `node "n" {
  id = "5ffj3-jarcq-lruhj-aemtc-sla"
  chip_id = "abcd"
}`,
		}, []string{"resources.hcl:3:3:", "chip_id is 2 bytes"}},
		{"unknown attribute", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  colour = "blue"
}`,
		}, []string{"resources.hcl:3:", "colour"}},
		{"missing required id", map[string]string{
			"resources.hcl": `subnet "a" { label = "x" }`,
		}, []string{"resources.hcl:1:", `"id" is required`}},
		{"proposal kind without its block", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "membership"
  title = "a title"
}`,
		}, []string{"proposals.hcl:2:", "needs a membership { } block"}},
		{"proposal block of another kind", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "deploy_guestos"
  title = "a title"
  deploy_guestos {
    subnet_id = subnet.a.id
    replica_version_id = "ab"
  }
  membership {
    subnet_id = subnet.a.id
    add { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
  }
}`,
		}, []string{"proposals.hcl:8:", "cannot hold a membership block"}},
		{"the old resize kind", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "resize"
  title = "a title"
}`,
		}, []string{"proposals.hcl:2:", `renamed "membership" in v0.3.0`}},
		{"a proposal written for v0.2.0", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "resize"
  title = "a title"
  resize {
    subnet_id = "2vxsx-fae"
    remove { id = "2vxsx-fae" }
  }
}`,
		}, []string{"proposals.hcl:4:3:", "renamed membership in v0.3.0"}},
		{"duplicate proposals", map[string]string{
			"resources.hcl": subnetA,
			"proposals.hcl": `proposal "p" {
  kind = "remove_node_provider"
  title = "a title"
  remove_node_provider { node_provider_id = "2vxsx-fae" }
}
proposal "p" {
  kind = "remove_node_provider"
  title = "a title"
  remove_node_provider { node_provider_id = "2vxsx-fae" }
}`,
		}, []string{"proposals.hcl:6:", "Duplicate proposal name"}},
		{"a bad id inside a proposal", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "remove_nodes"
  title = "a title"
  remove_nodes {
    node { id = "nope" }
  }
}`,
		}, []string{"proposals.hcl:5:12:", `proposal "p": node.id "nope"`}},
		{"the second removed node is no principal", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "membership"
  title = "a title"
  membership {
    subnet_id = "67htk-vfkxp-gn33q-baibq"
    remove { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
    remove { id = "not!" }
  }
}`,
		}, []string{"proposals.hcl:7:14:", `remove.id "not!"`}},
		{"a neuron id with a fraction", map[string]string{
			"proposals.hcl": "provider { neuron = 1.5 }\n",
		}, []string{"proposals.hcl:1:21:", "neuron = 1.5", "whole number"}},
		{"a canister count with a fraction", map[string]string{
			"proposals.hcl": `proposal "p" {
  kind = "update_subnet"
  title = "a title"
  update_subnet {
    subnet_id = "2vxsx-fae"
    max_number_of_canisters = 2.5
  }
}`,
		}, []string{"proposals.hcl:6:31:", "max_number_of_canisters = 2.5"}},
		{"two provider blocks", map[string]string{
			"proposals.hcl": "provider { neuron = 1 }\nprovider { neuron = 2 }\n",
		}, []string{"proposals.hcl:2:1:", "Duplicate provider block", "proposals.hcl:1"}},
		{"a resource block in proposals.hcl", map[string]string{
			"proposals.hcl": `subnet "a" { id = "67htk-vfkxp-gn33q-baibq" }`,
		}, []string{"proposals.hcl:1:1:", "subnet"}},
		{"an admin listed twice", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "cloud_engine"
  admins = ["aaaaa-aa", "AAAAA-AA"]
}`,
		}, []string{"resources.hcl:4:3:", "lists admin AAAAA-AA twice"}},
		{"free schedule on a verified application subnet", map[string]string{
			"resources.hcl": `subnet "a" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "verified_application"
  cost_schedule = "free"
}`,
		}, []string{"resources.hcl:4:3:", "only for application or cloud_engine"}},
		{"a syntax error", map[string]string{
			"resources.hcl": `subnet "a" {`,
		}, []string{"resources.hcl:1:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFleet(t, tc.files))
			if err == nil {
				t.Fatal("Load accepted the configuration")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			var cerr *Error
			if !errors.As(err, &cerr) || len(cerr.Diagnostics) == 0 {
				t.Fatalf("%T is not a set of HCL diagnostics", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !placed.MatchString(line) {
					t.Errorf("%q does not start with file:line:column", line)
				}
			}
		})
	}
}

func TestAMissingProposalsFileSaysWhereItLooked(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "proposals.hcl"))
	if err == nil || !strings.Contains(err.Error(), "proposals.hcl does not exist") {
		t.Fatalf("err = %v", err)
	}
}

func TestResourcesLoadWithoutAProposalsFile(t *testing.T) {
	c, err := LoadResources("testdata/fleet")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || len(c.Proposals) != 0 {
		t.Fatalf("nodes=%d proposals=%d", len(c.Nodes), len(c.Proposals))
	}
}

func TestAChipIDThatLooksLikeHexButIsBase64DecodesAsBase64(t *testing.T) {
	// 86 characters of unpadded base64 drawn only from hex digits (the last
	// one carries two bits, so it must be A): 64 bytes as base64, 43 as hex.
	s := strings.Repeat("aF0d", 22)[:85] + "A"
	want, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil || len(want) != 64 {
		t.Fatalf("fixture: %d bytes, %v", len(want), err)
	}
	if _, err := hex.DecodeString(s); err != nil {
		t.Fatalf("fixture %s is not hex-looking: %v", s, err)
	}
	got, err := DecodeChipID(s)
	if err != nil || string(got) != string(want) {
		t.Fatalf("DecodeChipID(%s) = %x, %v", s, got, err)
	}
}

func TestACloudEngineAndARentedSubnetMayDeclareAdmins(t *testing.T) {
	c, err := Load(writeFleet(t, map[string]string{"resources.hcl": `subnet "engine" {
  id = "67htk-vfkxp-gn33q-baibq"
  type = "cloud_engine"
  admins = ["aaaaa-aa"]
}
subnet "rented" {
  id = "2vxsx-fae"
  cost_schedule = "free"
  admins = ["aaaaa-aa"]
}
subnet "plain" { id = "rwlgt-iiaaa-aaaaa-aaaaa-cai" }
`}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"engine": {"cloud_engine", "free"}, "rented": {"application", "free"}, "plain": {"application", "normal"}}
	for _, s := range c.Subnets {
		if got := [2]string{s.EffectiveType(), s.EffectiveCostSchedule()}; got != want[s.Name] {
			t.Errorf("subnet %s is %v, want %v", s.Name, got, want[s.Name])
		}
	}
}

func TestALargeNeuronIDLoadsExactly(t *testing.T) {
	c, err := Load(writeFleet(t, map[string]string{"proposals.hcl": "provider { neuron = 12838523358913392196 }\n"}))
	if err != nil || c.Provider.Neuron == nil || *c.Provider.Neuron != 12838523358913392196 {
		t.Fatalf("neuron = %v, %v", c.Provider.Neuron, err)
	}
}

func TestPrincipalsWrittenInCapitalsLoadInTheirCanonicalText(t *testing.T) {
	c, err := Load(writeFleet(t, map[string]string{
		"resources.hcl": `subnet "a" { id = "67HTK-VFKXP-GN33Q-BAIBQ" }
node "n" {
  id     = "5FFJ3-JARCQ-LRUHJ-AEMTC-SLA"
  subnet = subnet.a.id
}`,
		"proposals.hcl": `proposal "p" {
  kind  = "membership"
  title = "a title"
  membership {
    subnet_id = subnet.a.id
    remove { id = "5FFJ3-JARCQ-LRUHJ-AEMTC-SLA" }
  }
}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Proposal("p").Body.(*kinds.Membership)
	if c.Subnets[0].ID != "67htk-vfkxp-gn33q-baibq" || c.Nodes[0].ID != "5ffj3-jarcq-lruhj-aemtc-sla" || c.Nodes[0].Subnet != "67htk-vfkxp-gn33q-baibq" ||
		m.SubnetID != "67htk-vfkxp-gn33q-baibq" || m.Remove[0].ID != "5ffj3-jarcq-lruhj-aemtc-sla" {
		t.Fatalf("subnet %s, node %+v, membership %+v", c.Subnets[0].ID, c.Nodes[0], m)
	}
}

func TestAFunctionCallIsOneErrorWithoutTheDecodersEcho(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte("node \"n\" {\n  id = upper(\"aaaaa-aa\")\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadResources(dir)
	if err == nil || !strings.Contains(err.Error(), "Function calls not allowed") || strings.Contains(err.Error(), "value must be known") {
		t.Fatalf("load: %v", err)
	}
}

func TestOneLoadNamesEveryProblemOfEveryProposalEachAtItsPlace(t *testing.T) {
	path := writeFleet(t, map[string]string{
		"resources.hcl": `subnet "a" { id = "67htk-vfkxp-gn33q-baibq" }
node "n" { id = "not-a-node" }
`,
		"proposals.hcl": `provider { host = "icp-api.io" }
proposal "p" {
  kind = "membership"
  title = "ab"
  membership {
    subnet_id = "not-a-subnet"
    add { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
    add { id = "5ffj3-jarcq-lruhj-aemtc-sla" }
  }
}
proposal "q" {
  kind = "remove_node"
  title = "a fine title"
  url = "ftp://x"
}
proposal "r" {
  kind = "update_subnet"
  title = "a fine title"
  update_subnet {
    subnet_id = "bad"
    max_number_of_canisters = 2.5
  }
  remove_nodes {}
}
proposal "r" {
  kind = "remove_node_operators"
  title = "a fine title"
  remove_node_operators { operators = [] }
}
`,
	})
	_, err := Load(path)
	if err == nil {
		t.Fatal("Load accepted the configuration")
	}
	for _, want := range []string{
		`resources.hcl:2:12: Invalid principal: node "n": id "not-a-node"`,
		`proposals.hcl:1:12: Invalid host: provider.host "icp-api.io"`,
		`proposals.hcl:4:3: Invalid proposal title: proposal "p"`,
		`proposals.hcl:6:5: Invalid principal: proposal "p": subnet_id "not-a-subnet"`,
		`proposals.hcl:8:11: Duplicate node: proposal "p"`,
		`proposals.hcl:12:3: Unknown proposal kind: proposal "q": kind "remove_node"`,
		`proposals.hcl:14:3: Invalid proposal url: proposal "q"`,
		`proposals.hcl:20:5: Invalid principal: proposal "r": subnet_id "bad"`,
		`proposals.hcl:21:31: Not a whole number: max_number_of_canisters = 2.5`,
		`proposals.hcl:23:3: Block does not match the kind: proposal "r" is of kind "update_subnet"`,
		`proposals.hcl:25:10: Duplicate proposal name: proposal "r" is declared twice`,
		`proposals.hcl:28:27: No operator to remove: proposal "r": operators is empty; list`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the load error does not name %q:\n%v", want, err)
		}
	}
}

func TestProviderHostIsRefusedExactlyWhenTheAgentWouldRefuseIt(t *testing.T) {
	for _, host := range []string{"https://icp-api.io", "https://icp-api.io/", "http://127.0.0.1:8080", "http://[::1]:4943/", "icp-api.io", "ftp://x", "http://", "https:///", "https://a b"} {
		_, err := Load(writeFleet(t, map[string]string{"proposals.hcl": fmt.Sprintf("provider { host = %q }\n", host)}))
		_, agentErr := agent.ParseURL(host)
		if (err != nil) != (agentErr != nil) {
			t.Errorf("host %q: load says %v, the agent %v", host, err, agentErr)
		}
		if err != nil && !strings.Contains(err.Error(), "Invalid host") {
			t.Errorf("host %q: %v, want Invalid host", host, err)
		}
	}
}

func TestAProposalKnowsWhereEachFieldAndIdOfItsBodyIsWritten(t *testing.T) {
	c := loadFleet(t)
	line := func(p *Proposal, key string) int { return p.Where(key).Start.Line }
	add := c.Proposal("add-n2")
	if got := line(add, "subnet_id"); got != 11 {
		t.Errorf("add-n2 subnet_id at line %d, want 11", got)
	}
	if got := line(add, add.Body.(*kinds.Membership).SubnetID); got != 11 {
		t.Errorf("add-n2's subnet id at line %d, want 11 (its subnet_id)", got)
	}
	if got := line(add, add.Body.(*kinds.Membership).Remove[0].ID); got != 14 {
		t.Errorf("add-n2's removed node at line %d, want 14 (its remove block's id)", got)
	}
	if got := line(add, "no such field"); got != 6 {
		t.Errorf("an unknown key at line %d, want 6 (the proposal's header)", got)
	}
	if got := line(c.Proposal("upgrade-app1"), c.Proposal("upgrade-app1").Body.(*kinds.DeployGuestOS).ReplicaVersionID); got != 26 {
		t.Errorf("upgrade-app1's version at line %d, want 26", got)
	}
	if r := c.Proposal("halt-app1").Where("features.http_requests"); r.Start.Line != 40 || !strings.HasSuffix(r.Filename, "proposals.hcl") {
		t.Errorf("halt-app1 features.http_requests at %s:%d, want proposals.hcl:40", r.Filename, r.Start.Line)
	}
}

// A misspelt field of a proposal, of its kind's block, or a misspelt
// block is refused naming what was meant, and a second block of a kind is
// refused naming the first: the kinds' blocks are decoded one by one, and
// still told as gohcl tells the fields of one struct.
func TestAMisspeltProposalFieldOrBlockIsToldWhatWasMeant(t *testing.T) {
	_, err := Load(writeFleet(t, map[string]string{"proposals.hcl": `proposal "x" {
  kind   = "membership"
  title  = "Move a node"
  summry = "x"
  membrship {
  }
}

proposal "y" {
  kind  = "remove_node_provider"
  title = "Remove a provider"
  remove_node_provider {
    node_providr_id = "2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"
  }
  remove_node_provider {
    node_provider_id = "2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"
  }
}
`}))
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		`proposals.hcl:4:3: Unsupported argument: An argument named "summry" is not expected here. Did you mean "summary"?`,
		`proposals.hcl:5:3: Unsupported block type: Blocks of type "membrship" are not expected here. Did you mean "membership"?`,
		`proposals.hcl:13:5: Unsupported argument: An argument named "node_providr_id" is not expected here. Did you mean "node_provider_id"?`,
		`proposals.hcl:15:3: Duplicate remove_node_provider block: Only one remove_node_provider block is allowed. Another was defined at`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}
