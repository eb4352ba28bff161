package main

import (
	"testing"

	"alpnib.dev/internal/clidoc"
)

//go:generate go test -run ^TestTheCLIReferenceIsCurrent$ -update .

func TestTheCLIReferenceIsCurrent(t *testing.T) {
	clidoc.Check(t, newRootCmd(), "../../docs/cli/alp.md", *update)
}
