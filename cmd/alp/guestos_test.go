package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/source"
)

// A guestos.hcl as a user left it: "current" (elected) is the default,
// "never" (3333…, not elected) is referenced by nobody, "pinned" (not
// elected) is still referenced by a node.
const userGuestos = `guestos_version "current" {
  id      = "2222222222222222222222222222222222222222"
  default = true
}

guestos_version "never" {
  id = "3333333333333333333333333333333333333333"
}

guestos_version "pinned" {
  id = "9999999999999999999999999999999999999999"
}
`

const userResources = `node "n1" {
  id              = "otplu-vkdrv-wvjvl-smbfu-at3pq-vmhlv-nyue7-7t23u-c4d74-csgup-7qe"
  guestos_version = guestos_version.pinned.id
}
`

func TestGuestosSyncKeepsTheDefaultAndIsIdempotent(t *testing.T) {
	d := startPlanDevnet(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "resources"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "resources", "guestos.hcl")
	os.WriteFile(path, []byte(userGuestos), 0o644)
	os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(userResources), 0o644)
	args := []string{"guestos", "sync", "--config", filepath.Join(dir, "proposals.hcl"), "--host", d.ICURL, "--dashboard-url", d.DashboardURL}

	out, errOut, err := runSplit(args...)
	if err != nil {
		t.Fatalf("sync: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "removed   never") || !strings.Contains(out, "added") || !strings.Contains(out, "written") {
		t.Fatalf("report:\n%s", out)
	}
	first, _ := os.ReadFile(path)
	golden(t, "guestos-sync.golden", first)

	cfg, err := config.LoadResources(dir)
	if err != nil {
		t.Fatalf("the synced file does not load: %v", err)
	}
	defaults := 0
	for _, v := range cfg.GuestOSVersions {
		if v.Default {
			defaults++
			if v.Name != "current" || v.ID != "2222222222222222222222222222222222222222" {
				t.Errorf("default moved to %+v", v)
			}
		}
	}
	if defaults != 1 || len(cfg.GuestOSVersions) != 3 {
		t.Fatalf("%d versions, %d defaults", len(cfg.GuestOSVersions), defaults)
	}

	out, _, err = runSplit(append(args, "--output", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var again guestosSync
	if err := json.Unmarshal([]byte(out), &again); err != nil || again.Changed {
		t.Fatalf("second sync changed the file (%v):\n%s", err, out)
	}
	second, _ := os.ReadFile(path)
	if string(first) != string(second) {
		t.Fatalf("second sync rewrote the file:\n%s", second)
	}
}

func TestGuestosSyncWritesAFreshFileAndLeavesVersionsDeclaredElsewhere(t *testing.T) {
	d := startPlanDevnet(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte("guestos_version \"mine\" {\n  id = \"1111111111111111111111111111111111111111\"\n}\n"), 0o644)
	out, errOut, err := runSplit("guestos", "sync", "--config", filepath.Join(dir, "proposals.hcl"), "--host", d.ICURL, "--dashboard-url", d.DashboardURL, "--output", "json")
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, errOut)
	}
	var res guestosSync
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Changed {
		t.Fatalf("%v %+v", err, res)
	}
	got := map[string]guestosBlock{}
	for _, b := range res.Blocks {
		got[b.ID] = b
	}
	if b := got["1111111111111111111111111111111111111111"]; b.Status != "elsewhere" || b.Name != "mine" || !strings.Contains(b.Why, "resources.hcl:1") {
		t.Errorf("version declared in resources.hcl: %+v", b)
	}
	if b := got["2222222222222222222222222222222222222222"]; b.Status != "added" || b.Name != "release-2026-11-01_00-00-base" || b.Label != b.Name {
		t.Errorf("elected version: %+v", b)
	}
	if _, err := config.LoadResources(dir); err != nil {
		t.Fatalf("duplicate or broken after sync: %v", err)
	}
}

func TestNewVersionsAreNamedAfterTheirReleaseWithoutClashes(t *testing.T) {
	res := syncGuestos(
		[]guestosBlock{{Name: "rel-a", ID: "aaaa0000"}},
		[]string{"aaaa0000", "bbbb0000", "cccc0000", "dddd0000"},
		[]source.Election{{VersionID: "bbbb0000", Release: "rel-a"}, {VersionID: "cccc0000", Release: "9-starts-with-a-digit"}},
		nil, nil)
	names := map[string]string{}
	for _, b := range res.Blocks {
		names[b.ID] = b.Name
	}
	want := map[string]string{"aaaa0000": "rel-a", "bbbb0000": "rel-a_bbbb0000", "cccc0000": "v_cccc0000", "dddd0000": "v_dddd0000"}
	for id, n := range want {
		if names[id] != n {
			t.Errorf("%s named %q, want %q", id, names[id], n)
		}
	}
}

func TestGuestosSyncCreatesNoEmptyFile(t *testing.T) {
	d := startPlanDevnet(t)
	dir := t.TempDir()
	var decl strings.Builder
	for i, id := range []string{"1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"} {
		decl.WriteString("guestos_version \"v" + string(rune('a'+i)) + "\" {\n  id = \"" + id + "\"\n}\n")
	}
	os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(decl.String()), 0o644)
	out, _, err := runSplit("guestos", "sync", "--config", filepath.Join(dir, "proposals.hcl"), "--host", d.ICURL, "--dashboard-url", d.DashboardURL)
	if err != nil || !strings.Contains(out, "resources/guestos.hcl not written: another resource file declares every elected version") ||
		!strings.Contains(out, "elsewhere va  1111111111111111111111111111111111111111") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "resources", "guestos.hcl")); !os.IsNotExist(err) {
		t.Fatalf("an empty guestos.hcl was created: %v", err)
	}
}
