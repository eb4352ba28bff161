package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/source"
)

// offlineStandIn is where alp's tests find every live source they do not
// start themselves: port 9 on loopback, where nothing listens, so a
// connection is refused at once and on this machine.
const offlineStandIn = "http://127.0.0.1:9"

// offlineEnv names the variables whose default is a real outside service
// (icp-api.io, the registry explorer, the ICP dashboard, AMD's KDS).
var offlineEnv = []string{"ALP_HOST", source.ExplorerURLEnv, source.DashboardURLEnv, source.KDSURLEnv}

// asAlp, set to 1, makes the test binary run as alp (see TestMain).
const asAlp = "ALP_TEST_AS_ALP"

// TestMain points every live source at offlineStandIn unless the
// environment already names one, so that a test which forgets to start the
// devnet fails fast instead of asking mainnet. Tests that start a devnet
// set its URLs themselves (t.Setenv), and the tests of the defaults' order
// clear the variables themselves.
func TestMain(m *testing.M) {
	// Invoked as alp (a test that runs a shell script of alp commands
	// links this binary into its PATH as alp): be alp.
	if os.Getenv(asAlp) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	for _, name := range offlineEnv {
		if os.Getenv(name) == "" {
			os.Setenv(name, offlineStandIn)
		}
	}
	// The certified registry copy goes to a cache folder of the run's own.
	cache, err := os.MkdirTemp("", "alp-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

func TestATestThatStartsNoDevnetReachesOnlyTheLoopbackStandIn(t *testing.T) {
	start := time.Now()
	out, err := execute(t, "registry", "subnet", "x6rmp-4m3v3-io5bv-ve6hr-5pvmp-iacd3-zxsfc-l7hee-luzm7-6ltzy-xqe",
		"--config", fixture)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:9") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("alp registry subnet without a devnet: %v\n%s", err, out)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the refusal took %s", took)
	}
}
