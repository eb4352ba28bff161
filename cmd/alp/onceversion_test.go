package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

// versionReads counts the get_latest_version queries an IC interface
// answers (the method name travels as text in the query's CBOR body).
// After answering one it runs after, when set, before the answer leaves
// (net/http sends it when the handler returns).
type versionReads struct {
	next  http.Handler
	n     atomic.Int64
	after atomic.Pointer[func()]
}

func (v *versionReads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	isVersion := false
	if strings.HasSuffix(r.URL.Path, "/query") {
		body, _ := io.ReadAll(r.Body)
		if isVersion = bytes.Contains(body, []byte("get_latest_version")); isVersion {
			v.n.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	v.next.ServeHTTP(w, r)
	if f := v.after.Load(); isVersion && f != nil {
		(*f)()
	}
}

// countingVersionReads is a devnet option whose IC interface counts
// get_latest_version through reads.
func countingVersionReads(reads *versionReads) devnet.Options {
	return devnet.Options{IC: func(reg *registry.Registry, gov *governance.Governance) (http.Handler, error) {
		s, err := localnet.New(localnet.Options{})
		if err != nil {
			return nil, err
		}
		s.InstallNNS(reg, gov)
		reads.next = s
		return reads, nil
	}}
}

// apply reads the registry version once, and everything at it: the
// payload's inherited parts, the dry run's seed and preflight (it read it
// three times, and preflight once more).
func TestApplyReadsTheRegistryVersionOnce(t *testing.T) {
	reads := &versionReads{}
	startApplyDevnetOptions(t, countingVersionReads(reads), func(*devnet.Fleet) {})
	statePath := filepath.Join(t.TempDir(), "state.json")
	for _, name := range []string{"halt-app1", "add-node-08"} {
		before := reads.n.Load()
		if out, errOut, err := runAlp(t, "submit\n", "apply", name, "--config", applyConfig, "--state", statePath, "--yes"); err != nil {
			t.Fatalf("apply %s: %v\n%s%s", name, err, out, errOut)
		}
		if n := reads.n.Load() - before; n != 1 {
			t.Errorf("apply %s read the registry version %d times, want once", name, n)
		}
	}
}

// import reads the registry version once whatever the declared kind: each
// kind of kinds.All, declared in the apply config, is imported (--force:
// one proposal stands for all, its kind aside) and counted.
func TestImportReadsTheRegistryVersionOnceForEveryKind(t *testing.T) {
	reads := &versionReads{}
	d := startApplyDevnetOptions(t, countingVersionReads(reads), func(*devnet.Fleet) {})
	if out, errOut, err := runAlp(t, "submit\n", "apply", "halt-app1", "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "s.json"), "--yes"); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	all := d.Governance.Proposals()
	id := strconv.FormatUint(all[len(all)-1].ID.ID, 10)
	cfg, err := config.Load(applyConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds.All {
		i := slices.IndexFunc(cfg.Proposals, func(p *config.Proposal) bool { return string(p.Kind) == k.Name() })
		if i < 0 {
			t.Errorf("%s declares no proposal of kind %s", applyConfig, k.Name())
			continue
		}
		name := cfg.Proposals[i].Name
		before := reads.n.Load()
		if out, errOut, err := runAlp(t, "", "import", name, id, "--force", "--config", applyConfig, "--state", filepath.Join(t.TempDir(), "s.json")); err != nil {
			t.Errorf("import %s (%s): %v\n%s%s", name, k.Name(), err, out, errOut)
		}
		if n := reads.n.Load() - before; n != 1 {
			t.Errorf("import %s (%s) read the registry version %d times, want once", name, k.Name(), n)
		}
	}
}

// import builds the payload's live parts from the record at the version it
// read, not at whatever is latest when it reads the record: the subnet's
// query limits change right after import reads the version, and the
// payload it records is still the one apply submitted.
func TestImportReadsTheInheritedRecordAtTheVersionItRead(t *testing.T) {
	instr, wall, size := uint64(20_000_000_000), uint64(40), uint64(1<<40)
	var app1 string
	reads := &versionReads{}
	d := startApplyDevnetOptions(t, countingVersionReads(reads), func(f *devnet.Fleet) {
		f.Subnets[0].ResourceLimits = &devnet.FleetResourceLimits{MaximumStateSize: &size, MaximumQueryInstructions: &instr, MaximumQueryWalltimeSeconds: &wall}
		app1 = f.Subnets[0].ID
	})
	dir := t.TempDir()
	cfg := writeGrowApp1(t, dir)
	statePath := filepath.Join(dir, "state.json")
	if out, errOut, err := runAlp(t, "submit\n", "apply", "grow-app1", "--config", cfg, "--state", statePath, "--yes"); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	applied := loadStateFile(t, statePath).Proposals["grow-app1"]
	if applied == nil {
		t.Fatal("apply recorded nothing")
	}
	var once sync.Once
	var changeErr error
	change := func() {
		once.Do(func() {
			raw, _, found := d.Registry.Get(nns.SubnetRecordKey(app1))
			var rec nns.SubnetRecordPB
			if !found {
				changeErr = errors.New("no subnet record")
			} else if changeErr = rec.Unmarshal(raw); changeErr == nil {
				more := instr + 1
				rec.ResourceLimits.MaximumQueryInstructions = &more
				d.Registry.Apply([]registry.Mutation{{Key: nns.SubnetRecordKey(app1), Value: rec.Marshal()}})
			}
		})
	}
	reads.after.Store(&change)
	imported := filepath.Join(dir, "imported.json")
	out, errOut, err := runAlp(t, "", "import", "grow-app1", fmt.Sprint(applied.ProposalID), "--config", cfg, "--state", imported)
	if err != nil {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	if changeErr != nil {
		t.Fatalf("changing the record after the version read: %v", changeErr)
	}
	if got := loadStateFile(t, imported).Proposals["grow-app1"]; got == nil || got.PayloadSHA256 != applied.PayloadSHA256 || strings.Contains(errOut, "differs") {
		t.Errorf("import recorded %+v (%s), apply %+v: want the payload apply submitted, built at the version import read", got, errOut, applied)
	}
}

// apply builds each payload once, against the registry version it pinned,
// and hands that one proposal to the dry run, preflight and the
// submission (it built it four times: offline first, then against the
// live record, and twice more inside preflight); so does an apply of a
// plan file, whose payload is built at the plan's registry version.
func TestApplyBuildsThePayloadOnce(t *testing.T) {
	startApplyDevnet(t)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.json")
	planned := filepath.Join(dir, "plan.json")
	if out, errOut, err := runAlp(t, "", "plan", "halt-app1", "-out", planned, "--config", applyConfig, "--state", statePath); err != nil {
		t.Fatalf("plan -out: %v\n%s%s", err, out, errOut)
	}
	for _, tc := range []struct {
		target []string
		stdin  string
		args   []string
	}{
		{[]string{planned, "halt-app1"}, "", nil},              // as planned, dry run only
		{[]string{"halt-app1"}, "submit\n", []string{"--yes"}}, // update_subnet: inherits from the live record
		{[]string{"add-node-08"}, "submit\n", []string{"--yes"}},
		{[]string{"drop-node-12"}, "", nil}, // dry run only
	} {
		before := proposal.Builds()
		args := append(append([]string{"apply"}, tc.target...), append([]string{"--config", applyConfig, "--state", statePath}, tc.args...)...)
		if out, errOut, err := runAlp(t, tc.stdin, args...); err != nil {
			t.Fatalf("apply %v: %v\n%s%s", tc.target, err, out, errOut)
		}
		if n := proposal.Builds() - before; n != 1 {
			t.Errorf("apply %v %v built the payload %d times, want once", tc.target, tc.args, n)
		}
	}
}
