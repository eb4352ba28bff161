package identity

import (
	"encoding/pem"
	"testing"
)

// FuzzFromPEM: no PEM or DER input makes key loading panic, and a key that
// loads signs something its own public key verifies.
func FuzzFromPEM(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\nMC4CAQEEICR11qAER72cCYEm80d7AC6IbO7l5nH8epO4wk0IXZc2oAcGBSuBBAAK\n-----END EC PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{
			data,
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: data}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: data}),
		} {
			id, err := FromPEM(in)
			if err != nil {
				continue
			}
			msg := []byte("fuzz")
			sig, err := id.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(id.PublicKeyDER(), msg, sig); err != nil {
				t.Fatalf("a loaded key's own signature does not verify: %v", err)
			}
		}
		_, _ = ParsePublicKeyDER(data)
	})
}
