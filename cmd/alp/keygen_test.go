package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/ic/principal"
)

func TestKeygenWritesAPrivateKeyAndShowPrintsTheSamePrincipal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	out, err := execute(t, "keygen", "--out", path)
	if err != nil {
		t.Fatalf("keygen --out: %v", err)
	}
	p, err := principal.Decode(strings.TrimSpace(out))
	if err != nil || !p.IsSelfAuthenticating() {
		t.Fatalf("keygen printed %q, not a self-authenticating principal (%v)", out, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	shown, err := execute(t, "keygen", "--show", path, "--output", "json")
	if err != nil {
		t.Fatalf("keygen --show: %v", err)
	}
	var got struct{ Principal string }
	if err := json.Unmarshal([]byte(shown), &got); err != nil || got.Principal != p.String() {
		t.Fatalf("--show printed %q, want principal %s", shown, p)
	}
}

func TestKeygenNeverOverwritesAKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(path, []byte("precious"), 0o600)
	if _, err := execute(t, "keygen", "--out", path); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("keygen over an existing file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "precious" {
		t.Fatal("the existing file was changed")
	}
}

func TestKeygenShowRefusesAFileThatIsNoKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(path, []byte("not a pem"), 0o600)
	if _, err := execute(t, "keygen", "--show", path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("keygen --show of garbage: %v", err)
	}
}
