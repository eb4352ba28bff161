package reported

import (
	"fmt"
	"testing"

	"alpnib.dev/nibrunner/desired"
)

func TestAReportCarriesABoundedNumberOfWarnings(t *testing.T) {
	var ws []desired.Reason
	for i := 0; i < 1000; i++ {
		ws = append(ws, desired.Reason{Path: fmt.Sprintf("x%d", i), Rule: "unknown property, ignored"})
	}
	got := WarningsOf(ws)
	if len(got) != MaxWarnings || got[MaxWarnings-1] != "and 969 more unknown properties: nibrunnerd check names them all" {
		t.Fatalf("%d warnings, the last %q", len(got), got[len(got)-1])
	}
	if WarningsOf(nil) != nil {
		t.Fatal("no warnings must leave the field out")
	}
}
