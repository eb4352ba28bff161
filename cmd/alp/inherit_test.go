package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/ic/nns"
)

// An update_subnet that declares resource_limits on a subnet whose record
// carries query limits leaves them as they were: the payload inherits
// them, plan's table says so, and after the proposal executes the record
// still has them (the devnet, like the registry, replaces resource_limits
// whole, so a payload without them would reset them).
func TestUpdateSubnetWithResourceLimitsKeepsTheLiveQueryLimits(t *testing.T) {
	instr, wall, size := uint64(20_000_000_000), uint64(40), uint64(1<<40)
	var app1 string
	d := startApplyDevnetEdited(t, 0, func(f *devnet.Fleet) {
		f.Subnets[0].ResourceLimits = &devnet.FleetResourceLimits{MaximumStateSize: &size, MaximumQueryInstructions: &instr, MaximumQueryWalltimeSeconds: &wall}
		app1 = f.Subnets[0].ID
	})
	dir := t.TempDir()
	cfg := writeGrowApp1(t, dir)
	statePath := filepath.Join(dir, "state.json")

	out, errOut, err := runAlp(t, "", "plan", "--config", cfg, "--state", statePath)
	if err != nil {
		t.Fatalf("plan: %v\n%s%s", err, out, errOut)
	}
	for _, row := range []string{
		"resource_limits.maximum_state_size  1099511627776  2199023255552  changes",
		"resource_limits.maximum_query_instructions  20000000000  20000000000  inherits",
		"resource_limits.maximum_query_walltime_seconds  40  40  inherits",
	} {
		if !strings.Contains(squeeze(out), row) {
			t.Errorf("plan's table has no row %q:\n%s", row, out)
		}
	}
	jsonOut, _, err := runAlp(t, "", "plan", "--config", cfg, "--state", statePath, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(jsonOut, `"how": "inherits"`) && !strings.Contains(jsonOut, `"how":"inherits"`) {
		t.Errorf("plan -o json has no inherited part:\n%s", jsonOut)
	}

	if out, errOut, err := runAlp(t, "submit\n", "apply", "grow-app1", "--config", cfg, "--state", statePath, "--yes"); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	raw, _, found := d.Registry.Get(nns.SubnetRecordKey(app1))
	if !found {
		t.Fatal("no subnet record")
	}
	var rec nns.SubnetRecordPB
	if err := rec.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	l := rec.ResourceLimits
	got, _ := json.Marshal(l)
	if l == nil || l.MaximumStateSize == nil || *l.MaximumStateSize != 2199023255552 ||
		l.MaximumQueryInstructions == nil || *l.MaximumQueryInstructions != instr ||
		l.MaximumQueryWalltimeSeconds == nil || *l.MaximumQueryWalltimeSeconds != wall {
		t.Fatalf("resource_limits after the proposal: %s, want the new state size and the query limits as they were", got)
	}

	// list, offline, holds the record against the declaration: in sync,
	// although it cannot know the query limits the payload inherited.
	applied := loadStateFile(t, statePath).Proposals["grow-app1"]
	if applied == nil || applied.DeclaredSHA256 == "" || applied.DeclaredSHA256 == applied.PayloadSHA256 {
		t.Fatalf("apply recorded %+v, want the declaration's own hash beside the payload's", applied)
	}
	if out, errOut, err := runAlp(t, "", "list", "--config", cfg, "--state", statePath); err != nil || !strings.Contains(out, " in sync ") || !strings.Contains(out, applied.PayloadSHA256[:12]) {
		t.Errorf("list after apply: %v, want in sync with the payload submitted (%s)\n%s%s", err, applied.PayloadSHA256[:12], out, errOut)
	}
	// import builds the payload as apply did, live parts included.
	imported := filepath.Join(dir, "imported.json")
	if out, errOut, err := runAlp(t, "", "import", "grow-app1", fmt.Sprint(applied.ProposalID), "--config", cfg, "--state", imported); err != nil {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	} else if strings.Contains(errOut, "differs") {
		t.Errorf("import says the payload differs from the one apply submitted:\n%s", errOut)
	}
	if got := loadStateFile(t, imported).Proposals["grow-app1"]; got == nil || got.PayloadSHA256 != applied.PayloadSHA256 || got.DeclaredSHA256 != applied.DeclaredSHA256 {
		t.Errorf("import recorded %+v, apply %+v: want the same hashes", got, applied)
	}
}

// writeGrowApp1 writes into dir the apply fleet's resources and a
// proposals file of one update_subnet, grow-app1, that declares app1's
// state limits and so inherits its query limits; it returns the proposals
// file.
func writeGrowApp1(t *testing.T, dir string) string {
	t.Helper()
	res, err := os.ReadFile("testdata/apply/resources.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), res, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "proposals.hcl")
	if err := os.WriteFile(cfg, []byte(`provider {
  neuron = 4242
}

proposal "grow-app1" {
  kind  = "update_subnet"
  title = "More state for app1"

  update_subnet {
    subnet_id = subnet.app1.id
    resource_limits {
      maximum_state_size  = 2199023255552
      maximum_state_delta = 0
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// squeeze collapses runs of spaces, so a table row compares without its
// column widths.
func squeeze(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), "  ")
}
