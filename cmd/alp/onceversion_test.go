package main

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
)

// versionReads counts the get_latest_version queries an IC interface
// answers (the method name travels as text in the query's CBOR body).
type versionReads struct {
	next http.Handler
	n    atomic.Int64
}

func (v *versionReads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/query") {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("get_latest_version")) {
			v.n.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	v.next.ServeHTTP(w, r)
}

// apply reads the registry version once, and everything at it: the
// payload's inherited parts, the dry run's seed and preflight (it read it
// three times, and preflight once more).
func TestApplyReadsTheRegistryVersionOnce(t *testing.T) {
	reads := &versionReads{}
	startApplyDevnetOptions(t, devnet.Options{IC: func(reg *registry.Registry, gov *governance.Governance) (http.Handler, error) {
		s, err := localnet.New(localnet.Options{})
		if err != nil {
			return nil, err
		}
		s.InstallNNS(reg, gov)
		reads.next = s
		return reads, nil
	}}, func(*devnet.Fleet) {})
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
