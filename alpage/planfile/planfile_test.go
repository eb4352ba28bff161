package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

func TestAWrittenPlanReadsBackWithItsEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.json")
	in := &File{CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Host: "http://127.0.0.1:1",
		Proposals: []Entry{{Name: "add-n2", Kind: "membership", PayloadSHA256: hashA, RegistryVersion: 7, Verdict: "ready"}}}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := out.Lookup("add-n2")
	if !ok || e != in.Proposals[0] || out.Host != in.Host || !out.CreatedAt.Equal(in.CreatedAt) || out.Format != Format {
		t.Fatalf("read back %+v", out)
	}
	if _, ok := out.Lookup("other"); ok {
		t.Fatal("found an entry that was never planned")
	}
	raw, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(raw), "}\n") || !strings.Contains(string(raw), "\n  \"format\": 1") {
		t.Fatalf("not 2-space JSON with a trailing newline:\n%s", raw)
	}
}

func TestCheckRefusesAMovedPayloadOrRegistry(t *testing.T) {
	e := Entry{Name: "p", PayloadSHA256: hashA, RegistryVersion: 7}
	if err := e.Check(hashA, 7); err != nil {
		t.Fatalf("unchanged plan refused: %v", err)
	}
	if err := e.Check(hashB, 7); !errors.Is(err, ErrPayloadMoved) || !strings.Contains(err.Error(), hashB) {
		t.Fatalf("moved payload: %v", err)
	}
	if err := e.Check(hashA, 8); !errors.Is(err, ErrRegistryMoved) || !strings.Contains(err.Error(), "version 7, now 8") {
		t.Fatalf("moved registry: %v", err)
	}
}

func TestReadRefusesUnknownFormatsAndEmptyPlans(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"future":  `{"format": 2, "proposals": [{"name": "p", "payload_sha256": "` + hashA + `"}]}`,
		"empty":   `{"format": 1, "proposals": []}`,
		"nohash":  `{"format": 1, "proposals": [{"name": "p"}]}`,
		"notjson": `plan`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(path); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing plan file read without error")
	}
}
