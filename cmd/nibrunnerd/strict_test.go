package main

import (
	"errors"
	"testing"
)

func TestCheckStrictRefusesADocumentWithAnUnknownProperty(t *testing.T) {
	out, err := execute(t, "check", "--strict", "testdata/check/typo.json")
	if !errors.Is(err, errRefused) {
		t.Fatalf("check --strict accepted a document with memoryMB in it: %v\n%s", err, out)
	}
	want := "instances[0].config.resources.memoryMB: unknown property: did you mean memoryMib?\n"
	if out != want {
		t.Fatalf("check --strict printed:\n%s\nwant:\n%s", out, want)
	}
}
