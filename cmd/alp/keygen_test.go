package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

func TestKeygenWritesAnEd25519PKCS8Key(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	if _, err := execute(t, "keygen", "--out", path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("not a PKCS#8 PEM:\n%s", data)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if _, ok := key.(ed25519.PrivateKey); err != nil || !ok {
		t.Fatalf("PKCS#8 key is %T (%v), want ed25519", key, err)
	}
}

func TestOfTwoKeygensRacingForOnePathExactlyOneWins(t *testing.T) {
	for round := 0; round < 20; round++ {
		path := filepath.Join(t.TempDir(), "key.pem")
		var wg sync.WaitGroup
		outs := make([]bytes.Buffer, 4)
		errs := make([]error, 4)
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = keygen(&outs[i], path, "text")
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				if won >= 0 {
					t.Fatalf("round %d: two keygens both wrote %s", round, path)
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no keygen won: %v", round, errs)
		}
		shown, err := execute(t, "keygen", "--show", path)
		if err != nil || shown != outs[won].String() {
			t.Fatalf("round %d: the file holds %q, the winner printed %q (%v)", round, shown, outs[won].String(), err)
		}
	}
}

func TestAnIdentityFileOthersCanReadIsWarnedAboutAndRefusedUnderStrictPermissions(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key.pem")
	if _, _, err := runAlp(t, "", "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	principal, stderr, err := runAlp(t, "", "keygen", "--show", key)
	if err != nil || stderr != "" {
		t.Fatalf("a 0600 key: %v, stderr %q", err, stderr)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runAlp(t, "", "keygen", "--show", key)
	if err != nil || out != principal || !strings.Contains(stderr, "warning: permissions 0644 for identity "+key+" are too open") || !strings.Contains(stderr, "chmod 600 "+key) {
		t.Fatalf("a 0644 key: %v, stdout %q, stderr %q", err, out, stderr)
	}
	out, _, err = runAlp(t, "", "keygen", "--show", key, "--strict-permissions")
	if exitCode(err) != 1 || out != "" || !strings.Contains(err.Error(), "--strict-permissions refuses such a file") {
		t.Fatalf("a 0644 key under --strict-permissions: exit %d, %v, stdout %q", exitCode(err), err, out)
	}
	if err := os.Chmod(key, 0o620); err != nil { // group may write it
		t.Fatal(err)
	}
	if _, _, err := runAlp(t, "", "keygen", "--show", key, "--strict-permissions"); err == nil {
		t.Fatal("a key its group may write was accepted under --strict-permissions")
	}
}

func TestApplyRefusesAnOpenIdentityFileUnderStrictPermissions(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key.pem")
	if _, _, err := runAlp(t, "", "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadApplyIdentity(key, true, io.Discard); err == nil || !strings.Contains(err.Error(), "permissions 0640") {
		t.Fatalf("strict: %v", err)
	}
	var warn strings.Builder
	if _, _, err := loadApplyIdentity(key, false, &warn); err != nil || !strings.Contains(warn.String(), "warning: permissions 0640") {
		t.Fatalf("not strict: %v, warned %q", err, warn.String())
	}
}
