package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
)

// noDial fails the test on any HTTP request made through the default
// transport, which the agent and every third-party client use.
type noDial struct{ t *testing.T }

func (n noDial) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("dialled %s", r.URL)
	return nil, http.ErrHandlerTimeout
}

func TestAMainnetHostNeverTrustsAFetchedRootKeyAndNothingIsDialled(t *testing.T) {
	saved := http.DefaultTransport
	http.DefaultTransport = noDial{t}
	t.Cleanup(func() { http.DefaultTransport = saved })

	dir := t.TempDir()
	fetching := filepath.Join(dir, "proposals.hcl")
	os.WriteFile(fetching, []byte("provider {\n  fetch_root_key = true\n}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(referenceResources), 0o644)
	for _, host := range []string{"https://icp-api.io", "https://ic0.app", "https://icp0.io", "https://rrkah-fqaaa-aaaaa-aaaaq-cai.raw.icp0.io"} {
		for _, c := range []struct {
			why  string
			env  string
			args []string
		}{
			{"$ALP_FETCH_ROOT_KEY=true", "true", []string{"reconcile", "--config", exampleConfig}},
			{"provider.fetch_root_key = true", "", []string{"reconcile", "--config", fetching}},
			{"$ALP_FETCH_ROOT_KEY=true, status", "true", []string{"status", "--config", exampleConfig}},
			{"$ALP_FETCH_ROOT_KEY=true, guestos sync", "true", []string{"guestos", "sync", "--config", fetching}},
		} {
			t.Setenv("ALP_FETCH_ROOT_KEY", c.env)
			_, _, err := runAlp(t, "", append(c.args, "--host", host, "--state", noState(t))...)
			if exitCode(err) != 1 || !strings.Contains(err.Error(), "root key") || !strings.Contains(err.Error(), "mainnet") {
				t.Errorf("%s with %s: exit %d, %v; want a refusal naming the root key", host, c.why, exitCode(err), err)
			}
		}
	}
}

func TestOnlyMainnetHostsSkipFetchingTheRootKeyByDefault(t *testing.T) {
	t.Setenv("ALP_FETCH_ROOT_KEY", "")
	for host, fetch := range map[string]bool{
		"https://icp-api.io": false, "https://ic0.app": false, "https://icp0.io": false, "https://a.icp0.io": false,
		"http://127.0.0.1:4943": true, "https://icp-api.io.example": true,
	} {
		if got := resolveFetchRootKey(&config.Config{}, host); got != fetch {
			t.Errorf("%s: fetch root key %v, want %v", host, got, fetch)
		}
	}
}

func TestQueryVerificationIsOnUnlessTurnedOffAndTheOutputSaysWhenItIsOff(t *testing.T) {
	d := startExampleDevnet(t)
	args := reconcileArgs(d, inSyncExample(t), noState(t))
	out, errOut, err := runSplit(args...)
	if err != nil || strings.Contains(errOut, "not verified") {
		t.Fatalf("verified: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = runSplit(append(args, "--no-verify-queries")...)
	if err != nil || !strings.Contains(errOut, "query answers from "+d.ICURL+" are not verified (--no-verify-queries)") ||
		!strings.Contains(out, "warning: query answers were not verified (--no-verify-queries)") {
		t.Fatalf("unverified: %v\n%s%s", err, out, errOut)
	}
	out, _, _ = runSplit(append(args, "--no-verify-queries", "--output", "json")...)
	if !strings.Contains(out, `"queries_unverified": true`) {
		t.Fatalf("the JSON report does not say its queries were unverified:\n%s", out)
	}
}
