package testenv

import "testing"

func TestAProgramThatExistsIsFoundAndItsPathReturned(t *testing.T) {
	if p := RequireCommand(t, "sh"); p == "" {
		t.Fatal("RequireCommand(sh) returned no path")
	}
}

func TestLookPathFailsForAProgramThatDoesNotExist(t *testing.T) {
	if _, err := lookPath("no-such-program-anywhere"); err == nil {
		t.Fatal("lookPath found a program that does not exist")
	}
}
