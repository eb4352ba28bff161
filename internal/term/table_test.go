package term

import (
	"strings"
	"testing"
)

func TestATableLinesUpPaintedColumnsAndEndsNoLineInSpaces(t *testing.T) {
	rows := [][]Cell{
		{PlainCell("NAME"), PlainCell("STATE"), PlainCell("NOTE")},
		{PlainCell("a"), {Text: "running", Color: Green}, PlainCell("")},
		{PlainCell("longer"), {Text: "failed", Color: Red, Rest: " (2)"}, PlainCell("see log")},
	}
	var plain, painted strings.Builder
	if err := WriteTable(&plain, Plain(), rows); err != nil {
		t.Fatal(err)
	}
	want := "NAME    STATE       NOTE\n" +
		"a       running\n" +
		"longer  failed (2)  see log\n"
	if plain.String() != want {
		t.Fatalf("plain table:\n%s\nwant:\n%s", plain.String(), want)
	}
	if err := WriteTable(&painted, Always(), rows); err != nil {
		t.Fatal(err)
	}
	stripped := strings.NewReplacer(string(Green), "", string(Red), "", reset, "").Replace(painted.String())
	if stripped != want {
		t.Fatalf("painted table, colours removed:\n%q\nwant:\n%q", stripped, want)
	}
}
