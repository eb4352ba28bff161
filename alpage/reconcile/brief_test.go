package reconcile

import (
	"fmt"
	"strings"
	"testing"

	"alpnib.dev/internal/term"
)

func TestTheBriefReportRollsUpRepeatedVersionDriftAndShowsOnlyWhatNeedsALook(t *testing.T) {
	r := &Report{RegistryVersion: 7}
	versions := Section{Title: "GuestOS versions"}
	for i := range 1408 {
		versions.Rows = append(versions.Rows, Row{Status: VersionMismatch, Drift: true, Name: fmt.Sprintf("n%d", i), ID: fmt.Sprintf("id%d", i),
			Declared: "release-X", Live: "release-Y", Subnet: fmt.Sprintf("s%02d", i%37)})
	}
	versions.Rows = append(versions.Rows,
		Row{Status: VersionMismatch, Drift: true, Name: "odd", ID: "idodd", Detail: "declared=release-X live=release-Z", Declared: "release-X", Live: "release-Z", Subnet: "s00"},
		Row{Status: Unreachable, Name: "dead", ID: "iddead", Detail: "node and dashboard unreadable: refused"},
		Row{Status: OK, Name: "fine", ID: "idfine", Detail: "release-X"})
	versions.Warnings = []string{"w", "w", "w", "other"}
	members := Section{Title: "subnet s00"}
	for i := range 13 {
		members.Rows = append(members.Rows, Row{Status: InSync, ID: fmt.Sprint(i)})
	}
	r.Sections = []Section{members, versions}
	for o := range 300 {
		sec := Section{Kind: SectionNodes, Title: fmt.Sprintf("nodes of operator o%03d", o)}
		for i := range 5 {
			sec.Rows = append(sec.Rows, Row{Status: OK, ID: fmt.Sprintf("o%d-%d", o, i)})
		}
		r.Sections = append(r.Sections, sec)
	}
	r.Drift, r.Unknown = 1409, 1
	var b strings.Builder
	if err := r.RenderBrief(&b, term.Plain()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"subnet s00: 13 rows, all in sync\n",
		"GuestOS versions: 1,411 rows, 1 in sync\n",
		"version-mismatch  1,408 nodes declared release-X run release-Y, in 37 subnets: s00, s01, s02, s03, s04 and 32 more\n",
		"odd  idodd  declared=release-X live=release-Z\n",
		"unreachable",
		"warning: w (×3)\n",
		"warning: other\n",
		"300 operators (their nodes): 1,500 rows, all in sync\n",
		"reconcile: 1409 drift, 1 unknown (not drift); every row with --all\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("brief report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "idfine") || strings.Contains(out, "id17 ") {
		t.Errorf("rows in sync or rolled up are printed:\n%s", out)
	}
	if lines := strings.Count(out, "\n"); lines > 24 {
		t.Errorf("%d lines, want a screenful", lines)
	}
}
