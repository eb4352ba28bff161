package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

func TestRegistrySyncPrintsTheCopysVersionAndASecondSyncFetchesNothing(t *testing.T) {
	d := startExampleDevnet(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out, errOut, err := runSplit("registry", "sync", "--host", d.ICURL)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	want := "registry version " + itoa(d.Registry.Version()) + "\n"
	if out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	d.Registry.Apply([]registry.Mutation{{Key: "some_key", Value: []byte("v")}})
	out, _, err = runSplit("registry", "sync", "--host", d.ICURL, "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got syncJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Version != d.Registry.Version() || got.Deltas != 1 || got.Requests != 1 || got.Rebuilt {
		t.Fatalf("second sync %+v, want one delta to version %d in one request", got, d.Registry.Version())
	}
}

func TestRegistryGetPrintsANodeRecordDecodedAsJSON(t *testing.T) {
	d := startExampleDevnet(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	node := d.Registry.Keys(nns.NodeRecordKey(""))[0]
	out, errOut, err := runSplit("registry", "get", node, "--host", d.ICURL)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var got struct {
		Key    string `json:"key"`
		Record struct {
			NodeOperatorID string `json:"node_operator_id"`
		} `json:"record"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Key != node || got.Record.NodeOperatorID == "" {
		t.Fatalf("registry get %s: %s", node, out)
	}
	if _, _, err := runSplit("registry", "get", "no_such_key", "--host", d.ICURL); err == nil || !strings.Contains(err.Error(), "holds no record") {
		t.Fatalf("an absent key: %v", err)
	}
}

func TestReconcileReadsTheCertifiedCopyAndSaysWhatItFetched(t *testing.T) {
	d := startExampleDevnet(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	statePath := noState(t)
	_, errOut, _ := runSplit(reconcileArgs(d, exampleConfig, statePath)...)
	want := "certified registry copy at version " + itoa(d.Registry.Version()) + " (" + itoa(d.Registry.Version()) + " delta(s) fetched in 1 request(s)"
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errOut)
	}
	_, errOut, _ = runSplit(reconcileArgs(d, exampleConfig, statePath)...)
	if !strings.Contains(errOut, "(0 delta(s) fetched in 1 request(s)") {
		t.Fatalf("a warm run fetched something:\n%s", errOut)
	}
}

func TestTheNodesOfEachOperatorFromTheNodeRecordsMatchTheExplorer(t *testing.T) {
	d := startExampleDevnet(t)
	ctx, a := devnetAgent(t, d)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c, res, err := openRegistryCopy(ctx, a, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	view := c.At(res.To)
	explorer := source.NewExplorer(d.ExplorerURL, nil)
	fleet, err := devnet.ParseFleet(devnet.DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range fleet.NodeOperators {
		fromRecords, err := view.OperatorNodes(ctx, op.ID)
		if err != nil {
			t.Fatal(err)
		}
		fromExplorer, err := explorer.OperatorNodes(ctx, op.ID)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(fromExplorer)
		if len(fromRecords) == 0 || !slices.Equal(fromRecords, fromExplorer) {
			t.Errorf("operator %s: node records say %v, the explorer %v", op.ID, fromRecords, fromExplorer)
		}
	}
}

// devnetAgent is an agent for d's IC endpoint, trusting its root key, and a
// context that ends with the test (at most 30 s).
func devnetAgent(t *testing.T, d *devnet.Devnet) (context.Context, *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, a
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func TestPlanAndGuestosSyncReadTheCertifiedCopy(t *testing.T) {
	d := startPlanDevnet(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, errOut, _ := runSplit(devnetArgs(d, "plan", "--config", planFixture, "--state", noState(t))...)
	if !strings.Contains(errOut, "certified registry copy at version "+itoa(d.Registry.Version())) || strings.Contains(errOut, "warning: registry copy") {
		t.Fatalf("plan did not read the certified copy:\n%s", errOut)
	}
	dir := t.TempDir()
	_, errOut, err := runSplit("guestos", "sync", "--config", filepath.Join(dir, "proposals.hcl"), "--host", d.ICURL, "--dashboard-url", d.DashboardURL)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "(0 delta(s) fetched in 1 request(s)") {
		t.Fatalf("guestos sync did not read the copy plan brought up to date:\n%s", errOut)
	}
}
