package identity

import (
	"encoding/pem"
	"testing"
)

func mustPEMBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}
