package reconcile

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/source"
	"alpnib.dev/internal/term"
)

var update = flag.Bool("update", false, "rewrite golden files")

func chip(b byte) []byte { return bytes.Repeat([]byte{b}, config.ChipIDLen) }

// fleet is a small declared fleet and a live state that agrees with it in
// every respect: subnet s1 with members n1 and n2 (n2 carries chip 0xaa),
// n3 unassigned, all under operator op1 (dc zh1) of provider p1, every
// node expected on the default version v1.
func fleet() (*config.Resources, *Live) {
	f := false
	res := &config.Resources{
		Subnets:         []*config.Subnet{{Name: "app", ID: "s1", SevEnabled: &f}},
		DataCenters:     []*config.DataCenter{{Name: "zurich", ID: "zh1", Region: "Europe,CH,Zurich"}},
		NodeProviders:   []*config.NodeProvider{{Name: "prov", ID: "p1"}},
		NodeOperators:   []*config.NodeOperator{{Name: "ops", ID: "op1", Provider: "p1", DC: "zh1"}},
		GuestOSVersions: []*config.GuestOSVersion{{Name: "current", ID: "v1", Default: true}, {Name: "previous", ID: "v0"}},
		Nodes: []*config.Node{
			{Name: "n1", ID: "n1", Subnet: "s1", Operator: "op1", Version: "v1"},
			{Name: "n2", ID: "n2", Subnet: "s1", Operator: "op1", Version: "v1", Chip: chip(0xaa)},
			{Name: "n3", ID: "n3", Operator: "op1", Version: "v1"},
		},
	}
	live := &Live{
		RegistryVersion: 7,
		Subnets:         map[string]SubnetFacts{"s1": {Found: true, Members: []string{"n1", "n2"}, Type: "application", CostSchedule: "normal"}},
		DataCenters:     map[string]DataCenterFacts{"zh1": {Found: true, Region: "Europe,CH,Zurich"}},
		Providers:       map[string]ProviderFacts{"p1": {Known: true, Operators: map[string]string{"op1": "zh1"}}},
		Operators:       map[string]OperatorFacts{"op1": {Found: true, Provider: "p1", DC: "zh1"}},
		OperatorNodes:   map[string]OperatorNodes{"op1": {Nodes: []string{"n1", "n2", "n3"}}},
		Nodes: map[string]NodeFacts{
			"n1": {Found: true, Operator: "op1"},
			"n2": {Found: true, Operator: "op1", Chip: chip(0xaa)},
			"n3": {Found: true, Operator: "op1"},
		},
		Chips: map[string]ChipFacts{hex.EncodeToString(chip(0xaa)): {Asked: &source.Verdict{Verified: true, Product: "Milan-B0"}}},
		Versions: map[string]VersionFacts{
			"n1": {Version: "v1", Source: FromNode}, "n2": {Version: "v1", Source: FromNode}, "n3": {Version: "v1", Source: FromNode},
		},
		Elected: map[string]bool{"v1": true, "v0": true},
	}
	return res, live
}

// rowOf finds the row of a section kind for id (and fact name, for the
// subnet record facts).
func rowOf(t *testing.T, r Report, kind, name, id string) Row {
	t.Helper()
	var found []Row
	for _, s := range r.Sections {
		if s.Kind != kind {
			continue
		}
		for _, row := range s.Rows {
			if row.ID == id && (name == "" || row.Name == name) {
				found = append(found, row)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s rows for %s %s in\n%s", len(found), kind, name, id, text(r))
	}
	return found[0]
}

func text(r Report) string {
	var b bytes.Buffer
	_ = r.Render(&b, term.Plain())
	return b.String()
}

func TestAFleetThatMatchesEverywhereIsInSync(t *testing.T) {
	res, live := fleet()
	r := Reconcile(res, live)
	if !r.InSync() || r.Drift != 0 || r.Unknown != 0 {
		t.Fatalf("drift %d unknown %d:\n%s", r.Drift, r.Unknown, text(r))
	}
}

func TestEveryRowStatusOfEverySection(t *testing.T) {
	type want struct {
		kind, name, id string
		status         Status
		detail         string // a part of the detail
	}
	cases := []struct {
		name   string
		change func(*config.Resources, *Live)
		want   want
	}{
		// 1. subnet membership and record facts
		{"a declared member that is one is in sync", nil, want{SectionSubnet, "n1", "n1", InSync, ""}},
		{"a declared member that is not one is missing", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Members = []string{"n2"}
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "n1", "n1", Missing, "not one on-chain"}},
		{"a declared member whose record is gone is deregistered", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Members = []string{"n2"}
			l.Subnets["s1"] = s
			l.Nodes["n1"] = NodeFacts{}
		}, want{SectionSubnet, "n1", "n1", Deregistered, "record is gone"}},
		{"a live member without a node block is unmanaged", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Members = append(s.Members, "stranger")
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "-", "stranger", Unmanaged, "without a node block"}},
		{"a live member declared unassigned is in the wrong subnet", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Members = append(s.Members, "n3")
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "n3", "n3", WrongSubnet, "declared unassigned, a member of subnet app"}},
		{"a declared member that is a member of another subnet is one row naming both", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Members = s.Members[1:]
			l.Subnets["s1"] = s
			l.Subnets["s9"] = SubnetFacts{Found: true, Members: []string{"n1"}}
		}, want{SectionSubnet, "n1", "n1", WrongSubnet, "declared in subnet app, a member of subnet s9"}},
		{"a subnet whose record is unread is unknown", func(_ *config.Resources, l *Live) {
			l.Subnets["s1"] = SubnetFacts{Err: "timeout"}
		}, want{SectionSubnet, "app", "s1", Unknown, "timeout"}},
		{"a subnet without a record is gone", func(_ *config.Resources, l *Live) {
			l.Subnets["s1"] = SubnetFacts{}
		}, want{SectionSubnet, "app", "s1", Gone, "no subnet record"}},
		{"an omitted type asserts application", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Type = "system"
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "type", "s1", Mismatch, `declared="application" live="system"`}},
		{"an omitted cost schedule asserts normal", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.CostSchedule = "free"
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "cost_schedule", "s1", Mismatch, `declared="normal" live="free"`}},
		{"an unspecified live schedule reads as the registry default", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.CostSchedule = ""
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "cost_schedule", "s1", InSync, "normal"}},
		{"sev_enabled differing is a mismatch", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.SevEnabled = true
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "sev_enabled", "s1", Mismatch, `declared="false" live="true"`}},
		{"an admin added on-chain is drift", func(_ *config.Resources, l *Live) {
			s := l.Subnets["s1"]
			s.Admins = []string{"admin-x"}
			l.Subnets["s1"] = s
		}, want{SectionSubnet, "admins", "s1", Mismatch, "- admin-x (on-chain, not declared)"}},
		{"a declared admin missing on-chain is drift", func(r *config.Resources, _ *Live) {
			r.Subnets[0].Admins = []string{"admin-y"}
		}, want{SectionSubnet, "admins", "s1", Mismatch, "+ admin-y (declared, not on-chain)"}},

		// 2a. data centers
		{"a data center in its declared region is ok", nil, want{SectionDataCenters, "zurich", "zh1", OK, "region Europe,CH,Zurich"}},
		{"a data center in another region is a region mismatch", func(_ *config.Resources, l *Live) {
			l.DataCenters["zh1"] = DataCenterFacts{Found: true, Region: "Europe,CH,Geneva"}
		}, want{SectionDataCenters, "zurich", "zh1", RegionMismatch, `declared="Europe,CH,Zurich" live="Europe,CH,Geneva"`}},
		{"a data center without a declared region is only checked to exist", func(r *config.Resources, l *Live) {
			r.DataCenters[0].Region = ""
			l.DataCenters["zh1"] = DataCenterFacts{Found: true, Region: "Europe,CH,Geneva"}
		}, want{SectionDataCenters, "zurich", "zh1", OK, "none declared"}},
		{"a data center without a record is gone", func(_ *config.Resources, l *Live) {
			l.DataCenters["zh1"] = DataCenterFacts{}
		}, want{SectionDataCenters, "zurich", "zh1", Gone, "no data center record"}},
		{"a data center record that could not be read is unknown", func(_ *config.Resources, l *Live) {
			l.DataCenters["zh1"] = DataCenterFacts{Err: "registry timeout"}
		}, want{SectionDataCenters, "zurich", "zh1", Unknown, "registry timeout"}},

		// 2b. node providers and operators
		{"an operator its provider owns in the declared dc is ok", nil, want{SectionOperators, "ops", "op1", OK, "dc zh1"}},
		{"an operator in another dc is a dc mismatch", func(_ *config.Resources, l *Live) {
			l.Operators["op1"] = OperatorFacts{Found: true, Provider: "p1", DC: "ge1"}
		}, want{SectionOperators, "ops", "op1", DCMismatch, "declared=zh1 live=ge1"}},
		{"an operator its declared provider does not own is drift", func(_ *config.Resources, l *Live) {
			l.Operators["op1"] = OperatorFacts{Found: true, Provider: "p9", DC: "zh1"}
		}, want{SectionOperators, "ops", "op1", NotOwned, "does not own it on-chain; its record names p9"}},
		{"an operator without a record is gone", func(_ *config.Resources, l *Live) {
			l.Operators["op1"] = OperatorFacts{}
		}, want{SectionOperators, "ops", "op1", Gone, "no node operator record"}},
		{"an operator record that could not be read is unknown", func(_ *config.Resources, l *Live) {
			l.Operators["op1"] = OperatorFacts{Err: "registry timeout"}
		}, want{SectionOperators, "ops", "op1", Unknown, "registry timeout"}},
		{"an operator whose provider is not on-chain is provider-absent", func(_ *config.Resources, l *Live) {
			l.Providers["p1"] = ProviderFacts{}
		}, want{SectionOperators, "ops", "op1", ProviderAbsent, "not on-chain"}},
		{"a provider governance does not list is provider-absent", func(_ *config.Resources, l *Live) {
			l.Providers["p1"] = ProviderFacts{}
		}, want{SectionOperators, "prov", "p1", ProviderAbsent, "does not list"}},
		{"a decommissioned operator that is absent is decommissioned", func(r *config.Resources, l *Live) {
			r.NodeOperators[0].Decommissioned = true
			l.Operators["op1"] = OperatorFacts{}
		}, want{SectionOperators, "ops", "op1", Decommissioned, "as expected"}},
		{"a decommissioned operator still there is drift", func(r *config.Resources, _ *Live) {
			r.NodeOperators[0].Decommissioned = true
		}, want{SectionOperators, "ops", "op1", StillRegistered, "still in the registry"}},
		{"an operator decommissioned with its provider says so", func(r *config.Resources, l *Live) {
			r.NodeProviders[0].Decommissioned = true
			r.NodeOperators[0].Decommissioned, r.NodeOperators[0].DecommissionedByProvider = true, true
			l.Providers["p1"] = ProviderFacts{}
			l.Operators["op1"] = OperatorFacts{}
		}, want{SectionOperators, "ops", "op1", Decommissioned, "with its node provider"}},
		{"a decommissioned provider that is gone is decommissioned", func(r *config.Resources, l *Live) {
			r.NodeProviders[0].Decommissioned = true
			l.Providers["p1"] = ProviderFacts{}
		}, want{SectionOperators, "prov", "p1", Decommissioned, "absent"}},
		{"a decommissioned provider governance still lists is drift", func(r *config.Resources, _ *Live) {
			r.NodeProviders[0].Decommissioned = true
		}, want{SectionOperators, "prov", "p1", StillRegistered, "still has it"}},
		{"a provider that could not be read is unknown", func(_ *config.Resources, l *Live) {
			l.Providers["p1"] = ProviderFacts{Err: "governance down"}
		}, want{SectionOperators, "ops", "op1", Unknown, "governance down"}},

		// 3. nodes per operator
		{"a node its record places under its operator is ok", nil, want{SectionNodes, "n3", "n3", OK, ""}},
		{"a node under another operator is an operator mismatch", func(_ *config.Resources, l *Live) {
			l.Nodes["n3"] = NodeFacts{Found: true, Operator: "op9"}
		}, want{SectionNodes, "n3", "n3", OperatorMismatch, "declared=ops live=op9"}},
		{"a node without a record is gone", func(_ *config.Resources, l *Live) {
			l.Nodes["n3"] = NodeFacts{}
		}, want{SectionNodes, "n3", "n3", Gone, "no node record"}},
		{"a node the operator owns without a block is unmanaged, per the explorer", func(_ *config.Resources, l *Live) {
			l.OperatorNodes["op1"] = OperatorNodes{Nodes: []string{"n1", "n2", "n3", "n4"}}
		}, want{SectionNodes, "-", "n4", Unmanaged, "[per registry explorer]"}},
		{"a decommissioned node whose record is gone is decommissioned", func(r *config.Resources, l *Live) {
			r.Nodes[2].Decommissioned = true
			l.Nodes["n3"] = NodeFacts{}
		}, want{SectionNodes, "n3", "n3", Decommissioned, "as declared"}},
		{"a decommissioned node still registered is drift, from its own record", func(r *config.Resources, l *Live) {
			r.Nodes[2].Decommissioned = true
			l.OperatorNodes["op1"] = OperatorNodes{Nodes: []string{"n1", "n2"}}
		}, want{SectionNodes, "n3", "n3", StillRegistered, "still in the registry"}},
		{"a node record that could not be read is unknown", func(_ *config.Resources, l *Live) {
			l.Nodes["n3"] = NodeFacts{Err: "registry timeout"}
		}, want{SectionNodes, "n3", "n3", Unknown, "registry timeout"}},

		// 4. chip ids
		{"a chip that matches and AMD knows is in sync", nil, want{SectionChips, "n2", "n2", InSync, "AMD KDS: Milan-B0"}},
		{"no chip declared and none on-chain is in sync", nil, want{SectionChips, "n1", "n1", InSync, "no chip"}},
		{"a different chip on-chain is chip-changed", func(_ *config.Resources, l *Live) {
			l.Nodes["n2"] = NodeFacts{Found: true, Operator: "op1", Chip: chip(0xbb)}
		}, want{SectionChips, "n2", "n2", ChipChanged, "declared=aaaaaaaaaaaaaaaa… live=bbbbbbbbbbbbbbbb…"}},
		{"a declared chip the record lacks is chip-missing", func(_ *config.Resources, l *Live) {
			l.Nodes["n2"] = NodeFacts{Found: true, Operator: "op1"}
		}, want{SectionChips, "n2", "n2", ChipMissing, "the record has none"}},
		{"a chip on-chain the config omits is chip-undeclared", func(_ *config.Resources, l *Live) {
			l.Nodes["n1"] = NodeFacts{Found: true, Operator: "op1", Chip: chip(0xcc)}
		}, want{SectionChips, "n1", "n1", ChipUndeclared, "on-chain cccccccccccccccc…"}},
		{"a chip id of the wrong length is malformed", func(_ *config.Resources, l *Live) {
			l.Nodes["n2"] = NodeFacts{Found: true, Operator: "op1", Chip: []byte{1, 2, 3}}
		}, want{SectionChips, "n2", "n2", Malformed, "3 bytes"}},
		{"a chip AMD does not know is amd-unverified", func(_ *config.Resources, l *Live) {
			l.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Asked: &source.Verdict{Refused: true}}
		}, want{SectionChips, "n2", "n2", AMDUnverified, "no product line knows the chip"}},
		{"a KDS certificate naming another chip is amd-unverified", func(_ *config.Resources, l *Live) {
			l.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Asked: &source.Verdict{Refused: true, Reason: "the Milan certificate KDS served names another chip"}}
		}, want{SectionChips, "n2", "n2", AMDUnverified, "names another chip"}},
		{"an inconclusive KDS leaves a matching chip unknown, not drift", func(_ *config.Resources, l *Live) {
			l.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Asked: &source.Verdict{Inconclusive: true, Reason: "HTTP 429"}}
		}, want{SectionChips, "n2", "n2", Unknown, "the chip matches the record; AMD KDS inconclusive: HTTP 429"}},
		{"an inconclusive KDS leaves a cached verdict standing", func(_ *config.Resources, l *Live) {
			l.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Cached: true, Product: "Milan-B0", Asked: &source.Verdict{Inconclusive: true, Reason: "HTTP 429"}}
		}, want{SectionChips, "n2", "n2", InSync, "cached; asking again was inconclusive: HTTP 429"}},
		{"a cached verdict stands when KDS is not asked", func(_ *config.Resources, l *Live) {
			l.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Cached: true, Product: "Milan-B0"}
		}, want{SectionChips, "n2", "n2", InSync, "Milan-B0 (cached)"}},
		{"a node record that could not be read has an unknown chip", func(_ *config.Resources, l *Live) {
			l.Nodes["n2"] = NodeFacts{Err: "registry timeout"}
		}, want{SectionChips, "n2", "n2", Unknown, "unread"}},

		// 5. versions
		{"a node running its effective version is ok", nil, want{SectionVersions, "n1", "n1", OK, "current"}},
		{"a node running another version is a mismatch", func(_ *config.Resources, l *Live) {
			l.Versions["n1"] = VersionFacts{Version: "v0", Source: FromNode}
		}, want{SectionVersions, "n1", "n1", VersionMismatch, "declared=current live=previous"}},
		{"a version read from the dashboard says so", func(_ *config.Resources, l *Live) {
			l.Versions["n1"] = VersionFacts{Version: "v1", Source: FromDashboard}
		}, want{SectionVersions, "n1", "n1", OK, "current via dashboard"}},
		{"a version read from the dashboard shows the status it gave the node", func(_ *config.Resources, l *Live) {
			l.Versions["n1"] = VersionFacts{Version: "v1", Source: FromDashboard, DashboardStatus: "DEGRADED"}
		}, want{SectionVersions, "n1", "n1", OK, "current via dashboard (status DEGRADED)"}},
		{"a status alp does not know is quoted", func(_ *config.Resources, l *Live) {
			l.Versions["n1"] = VersionFacts{Version: "v1", Source: FromDashboard, DashboardStatus: "ODD\x1b[31m"}
		}, want{SectionVersions, "n1", "n1", OK, `current via dashboard (status "ODD\x1b[31m")`}},
		{"a version a node reported over unverified TLS says so", func(_ *config.Resources, l *Live) {
			l.Versions["n1"] = VersionFacts{Version: "v1", Source: FromNode, TLSUnverified: true}
		}, want{SectionVersions, "n1", "n1", OK, "current " + UnverifiedNodeLabel}},
		{"a node neither it nor the dashboard answers for is unreachable", func(_ *config.Resources, l *Live) {
			l.Versions["n1"] = VersionFacts{Err: "node: refused; dashboard: 502"}
		}, want{SectionVersions, "n1", "n1", Unreachable, "node: refused; dashboard: 502"}},
		{"an expected version outside the elected set is marked", func(_ *config.Resources, l *Live) {
			delete(l.Elected, "v1")
		}, want{SectionVersions, "n1", "n1", OK, "current NOT ELECTED"}},
		{"a node overriding the default is marked", func(r *config.Resources, l *Live) {
			r.Nodes[0].Version, r.Nodes[0].VersionOverride = "v0", true
			l.Versions["n1"] = VersionFacts{Version: "v0", Source: FromNode}
		}, want{SectionVersions, "n1", "n1", OK, "previous [override]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, live := fleet()
			if c.change != nil {
				c.change(res, live)
			}
			r := Reconcile(res, live)
			row := rowOf(t, r, c.want.kind, c.want.name, c.want.id)
			if row.Status != c.want.status || !strings.Contains(row.Detail, c.want.detail) {
				t.Fatalf("row %+v, want status %s with %q", row, c.want.status, c.want.detail)
			}
			if row.Drift != c.want.status.Drift() {
				t.Fatalf("row drift %v for %s", row.Drift, row.Status)
			}
			if c.want.status.Drift() && (r.Drift == 0 || r.InSync()) {
				t.Fatalf("a %s row left the report in sync", row.Status)
			}
		})
	}
}

func TestUnknownAndUnreachableNeverCountAsDrift(t *testing.T) {
	res, live := fleet()
	live.Subnets["s1"] = SubnetFacts{Err: "timeout"}
	live.Providers["p1"] = ProviderFacts{Err: "timeout"}
	for id := range live.Nodes {
		live.Nodes[id] = NodeFacts{Err: "timeout"}
		live.Versions[id] = VersionFacts{Err: "timeout"}
	}
	r := Reconcile(res, live)
	if r.Drift != 0 || !r.InSync() {
		t.Fatalf("unread facts counted as drift:\n%s", text(r))
	}
	if r.Unknown == 0 {
		t.Fatal("nothing reported unknown")
	}
	if r.Ran() {
		t.Fatal("the gate ran without the registry")
	}
	for _, s := range []Status{Unknown, Unreachable, Decommissioned, OK, InSync} {
		if s.Drift() {
			t.Errorf("%s counts as drift", s)
		}
	}
}

func TestAFailedRegistryOrGovernanceReadMeansTheGateDidNotRun(t *testing.T) {
	for name, change := range map[string]func(*Live){
		"a subnet record":      func(l *Live) { l.Subnets["s1"] = SubnetFacts{Err: "timeout"} },
		"a data center record": func(l *Live) { l.DataCenters["zh1"] = DataCenterFacts{Err: "timeout"} },
		"list_node_providers": func(l *Live) {
			l.Providers["p1"] = ProviderFacts{Err: "list_node_providers: timeout", ErrFrom: ReadGovernance}
		},
		"an operator record": func(l *Live) { l.Operators["op1"] = OperatorFacts{Err: "timeout"} },
		"a node record":      func(l *Live) { l.Nodes["n3"] = NodeFacts{Err: "timeout"} },
	} {
		t.Run(name, func(t *testing.T) {
			res, live := fleet()
			change(live)
			r := Reconcile(res, live)
			if r.Ran() || len(r.FailedReads) != 1 {
				t.Fatalf("failed reads %q", r.FailedReads)
			}
			out := text(r)
			if !strings.Contains(out, "reconcile did not run: 1 registry or governance read(s) failed:\n  "+r.FailedReads[0]) ||
				strings.Contains(out, "in sync") {
				t.Fatalf("report:\n%s", out)
			}
		})
	}
	res, live := fleet()
	live.Providers["p1"] = ProviderFacts{Err: "list_node_providers: timeout", ErrFrom: ReadGovernance}
	if r := Reconcile(res, live); r.FailedReads[0] != "governance: node provider p1: list_node_providers: timeout" {
		t.Fatalf("failed read %q does not say it was governance", r.FailedReads[0])
	}
}

func TestThirdPartySilenceIsUnknownCountedPerSourceAndTheGateStillRuns(t *testing.T) {
	res, live := fleet()
	live.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Asked: &source.Verdict{Inconclusive: true, Reason: "HTTP 429"}}
	live.Versions["n1"] = VersionFacts{Err: "node: refused; dashboard: 502"}
	live.Versions["n3"] = VersionFacts{Err: "node: refused; dashboard: 502"}
	live.OperatorNodes["op1"] = OperatorNodes{Err: "502"}
	r := Reconcile(res, live)
	if !r.Ran() || !r.InSync() || r.Unknown != 4 {
		t.Fatalf("ran %v, drift %d, unknown %d:\n%s", r.Ran(), r.Drift, r.Unknown, text(r))
	}
	if want := "reconcile: in sync, 4 unknown (not drift; 1 registry explorer, 1 AMD KDS, 2 node status or dashboard)"; !strings.Contains(text(r), want) {
		t.Fatalf("summary lacks %q:\n%s", want, text(r))
	}
}

func TestAnUnreadableElectedSetIsAWarningAndSkipsTheCheck(t *testing.T) {
	res, live := fleet()
	live.Elected, live.ElectedErr = nil, "registry timeout"
	r := Reconcile(res, live)
	row := rowOf(t, r, SectionVersions, "n1", "n1")
	if row.Status != OK || strings.Contains(row.Detail, "NOT ELECTED") {
		t.Fatalf("row %+v", row)
	}
	if !strings.Contains(text(r), "warning: the elected version set is unreadable (registry timeout)") {
		t.Fatalf("no warning:\n%s", text(r))
	}
}

func TestANodeOptedOutOfTheVersionCheckHasNoVersionRow(t *testing.T) {
	res, live := fleet()
	res.Nodes[0].Version = "" // guestos_version = "none"
	r := Reconcile(res, live)
	for _, s := range r.Sections {
		for _, row := range s.Rows {
			if s.Kind == SectionVersions && row.ID == "n1" {
				t.Fatalf("opted-out node checked: %+v", row)
			}
		}
	}
}

func TestEveryStatusHasOneColourAndDriftingOnesAreRed(t *testing.T) {
	for _, s := range statuses {
		if s.Drift() != (s.Color() == term.Red) {
			t.Errorf("%s: drift %v, colour %q", s, s.Drift(), s.Color())
		}
	}
}

func TestRowsAreSortedByIDWithinASection(t *testing.T) {
	res, live := fleet()
	live.OperatorNodes["op1"] = OperatorNodes{Nodes: []string{"n0", "n1", "n2", "n3", "n9"}}
	r := Reconcile(res, live)
	for _, s := range r.Sections {
		if s.Kind == SectionSubnet {
			continue // record facts follow the membership rows
		}
		for i := 1; i < len(s.Rows); i++ {
			if s.Rows[i-1].ID > s.Rows[i].ID {
				t.Fatalf("%s: %s before %s", s.Title, s.Rows[i-1].ID, s.Rows[i].ID)
			}
		}
	}
}

// TestTheReportRendersAsGoldenTextAndJSON pins the row format
// `<status padded>  <name or ->  <id>[  detail]` and its JSON twin on a
// fleet with one row of most statuses.
func TestTheReportRendersAsGoldenTextAndJSON(t *testing.T) {
	res, live := fleet()
	s := live.Subnets["s1"]
	s.Members = []string{"n2", "stranger"}
	s.SevEnabled = true
	live.Subnets["s1"] = s
	live.Operators["op1"] = OperatorFacts{Found: true, Provider: "p1", DC: "ge1"}
	live.OperatorNodes["op1"] = OperatorNodes{Nodes: []string{"n1", "n2", "n3", "n4"}}
	live.DataCenters["zh1"] = DataCenterFacts{Found: true, Region: "Europe,CH,Geneva"}
	live.Chips[hex.EncodeToString(chip(0xaa))] = ChipFacts{Asked: &source.Verdict{Inconclusive: true, Reason: "HTTP 429"}}
	live.Versions["n3"] = VersionFacts{Version: "v1", Source: FromNode, TLSUnverified: true}
	live.Versions["n1"] = VersionFacts{Version: "v0", Source: FromDashboard}
	live.Versions["n2"] = VersionFacts{Err: "node: connection refused; dashboard: 502 Bad Gateway"}
	r := Reconcile(res, live)
	golden(t, "report.golden", []byte(text(r)))
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", append(js, '\n'))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestANodeNamingASubnetNoBlockDeclaresIsCheckedAgainstThatSubnet(t *testing.T) {
	member := func(members ...string) func(*config.Resources, *Live) {
		return func(res *config.Resources, l *Live) {
			res.Nodes[2].Subnet = "s2"
			l.Subnets["s2"] = SubnetFacts{Found: true, Members: members, Type: "system"}
		}
	}
	cases := []struct {
		name   string
		change func(*config.Resources, *Live)
		status Status
		detail string
	}{
		{"a member it is not is missing", member("stranger"), Missing, "not one on-chain"},
		{"a member it is is in sync", member("n3", "stranger"), InSync, ""},
		{"a subnet the registry has no record of leaves it missing", func(res *config.Resources, l *Live) {
			res.Nodes[2].Subnet = "s2"
			l.Subnets["s2"] = SubnetFacts{}
		}, Missing, "not one on-chain"},
		{"a subnet record that could not be read is unknown", func(res *config.Resources, l *Live) {
			res.Nodes[2].Subnet = "s2"
			l.Subnets["s2"] = SubnetFacts{Err: "registry timeout"}
		}, Unknown, "registry timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, live := fleet()
			c.change(res, live)
			r := Reconcile(res, live)
			row := rowOf(t, r, SectionSubnet, "n3", "n3")
			if row.Status != c.status || !strings.Contains(row.Detail, c.detail) || row.Drift != c.status.Drift() {
				t.Fatalf("row %+v, want %s %q\n%s", row, c.status, c.detail, text(r))
			}
			out := text(r)
			if !strings.Contains(out, "subnet s2 (no subnet block; checked for the node blocks it concerns)") {
				t.Fatalf("no section for s2:\n%s", out)
			}
			// Only what a node block declares is compared: the subnet's
			// other members and its record facts are nobody's declaration.
			if strings.Contains(out, "stranger") || strings.Contains(out, `declared="application" live="system"`) {
				t.Fatalf("undeclared facts of s2 reported:\n%s", out)
			}
		})
	}
}

func TestANodeDeclaredUnassignedButInASubnetNoBlockDeclaresIsInTheWrongSubnet(t *testing.T) {
	res, live := fleet()
	live.Subnets["s9"] = SubnetFacts{Found: true, Members: []string{"n3", "stranger"}, Type: "system"}
	r := Reconcile(res, live)
	row := rowOf(t, r, SectionSubnet, "n3", "n3")
	if row.Status != WrongSubnet || !row.Drift || row.Detail != "declared unassigned, a member of subnet s9" {
		t.Fatalf("row %+v\n%s", row, text(r))
	}
	if out := text(r); !strings.Contains(out, "subnet s9 (no subnet block;") || strings.Contains(out, "stranger") {
		t.Fatalf("want a section for s9 with n3 alone:\n%s", out)
	}
	// A subnet that lists no declared node is none of the fleet's business.
	live.Subnets["s9"] = SubnetFacts{Found: true, Members: []string{"stranger"}}
	if out := text(Reconcile(res, live)); strings.Contains(out, "s9") {
		t.Fatalf("a section for a subnet no declared node is in:\n%s", out)
	}
}

func TestAnUnreadSubnetListMeansTheGateDidNotRun(t *testing.T) {
	res, live := fleet()
	live.SubnetListErr = "registry timeout"
	r := Reconcile(res, live)
	if r.Ran() || !strings.Contains(strings.Join(r.FailedReads, "\n"), "subnet list subnet_list: registry timeout") {
		t.Fatalf("failed reads %v", r.FailedReads)
	}
}
