package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/ic/principal"
)

const app1 = "fu2zt-oxzx4-dxcoj-4u45t-47rks-slgwe-sf4io-haiaz-g5exm-7neoa-iae"

func TestRegistrySubnetPrintsAFragmentThatLoadsBack(t *testing.T) {
	d := startPlanDevnet(t)
	out, errOut, err := runSplit("registry", "subnet", app1, "--host", d.ICURL, "--config", filepath.Join(t.TempDir(), "none.hcl"))
	if err != nil {
		t.Fatalf("registry subnet: %v\n%s", err, errOut)
	}
	golden(t, "registry-subnet.golden", []byte(out))

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadResources(dir)
	if err != nil {
		t.Fatalf("the fragment does not load: %v", err)
	}
	if len(cfg.Subnets) != 1 || cfg.Subnets[0].ID != app1 || cfg.Subnets[0].Name != "subnet_fu2zt" {
		t.Fatalf("subnets %+v", cfg.Subnets)
	}
	live, _, err := d.Registry.Subnet(mustPrincipal(t, app1))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodes) != len(live.Membership) {
		t.Fatalf("%d node blocks for %d members", len(cfg.Nodes), len(live.Membership))
	}
	for i, n := range cfg.Nodes {
		if n.Subnet != app1 || !strings.HasPrefix(n.Name, "node_") || (i > 0 && cfg.Nodes[i-1].ID >= n.ID) {
			t.Errorf("node %d: %+v (want subnet %s, sorted by id)", i, n, app1)
		}
	}
}

func TestRegistrySubnetJSONListsTheMembers(t *testing.T) {
	d := startPlanDevnet(t)
	out, _, err := runSplit("registry", "subnet", app1, "--host", d.ICURL, "--output", "json", "--config", filepath.Join(t.TempDir(), "none.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var got subnetJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.SubnetID != app1 || len(got.Nodes) != 3 || got.RegistryVersion != d.Registry.Version() {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestRegistrySubnetRefusesAnUnknownSubnet(t *testing.T) {
	d := startPlanDevnet(t)
	_, _, err := runSplit("registry", "subnet", "ssmon-no4cw-53l6a-ain4x-pbiaj-rltm4-h2drd-qzlg7-2acon-ggg5o-4qe", "--host", d.ICURL, "--config", filepath.Join(t.TempDir(), "none.hcl"))
	if err != nil {
		t.Fatalf("app2 exists: %v", err)
	}
	_, _, err = runSplit("registry", "subnet", "aaaaa-aa", "--host", d.ICURL, "--config", filepath.Join(t.TempDir(), "none.hcl"))
	if exitCode(err) != 1 {
		t.Fatalf("unknown subnet: %v", err)
	}
}

func TestShortNamesLengthenOnAClash(t *testing.T) {
	names := shortNames([]string{"abcde-fghij-k", "abcde-fzzzz-k", "xyzab-ccccc"})
	if names["abcde-fghij-k"] != "node_abcdefg" || names["abcde-fzzzz-k"] != "node_abcdefz" || names["xyzab-ccccc"] != "node_xyzabcc" {
		t.Fatalf("names %v", names)
	}
}

func mustPrincipal(t *testing.T, s string) principal.Principal {
	t.Helper()
	p, err := principal.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The fragment reconciles clean as it is pasted, for a subnet that is not
// an application subnet with default settings: a system subnet whose
// members carry chips and operators.
func TestTheRegistrySubnetFragmentReconcilesClean(t *testing.T) {
	chip := strings.Repeat("ab", 64)
	var subnet string
	d := startApplyDevnetEdited(t, 0, func(f *devnet.Fleet) {
		s := &f.Subnets[0]
		s.Type, subnet = "system", s.ID
		for i := range f.Nodes {
			if f.Nodes[i].ID == s.Members[0] {
				f.Nodes[i].ChipID = chip
			}
		}
	})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	out, errOut, err := runSplit("registry", "subnet", subnet, "--host", d.ICURL, "--config", filepath.Join(dir, "proposals.hcl"))
	if err != nil {
		t.Fatalf("registry subnet: %v\n%s", err, errOut)
	}
	for _, want := range []string{`type = "system"`, `chip_id = "` + chip + `"`, "operator = "} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("fragment lacks %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, errOut, err := runSplit("reconcile", "--config", filepath.Join(dir, "proposals.hcl"), "--state", filepath.Join(dir, "state.json"), "--host", d.ICURL, "--all")
	if err != nil {
		t.Fatalf("the pasted fragment does not reconcile clean: %v\n%s%s", err, rep, errOut)
	}
}
