package version

import (
	"runtime/debug"
	"testing"
)

func TestTheLinkerStampWinsOverTheModuleVersion(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}
	if got := resolve("v1.2.3", info); got != "v1.2.3" {
		t.Fatalf("resolve = %q, want the stamp v1.2.3", got)
	}
}

func TestAnUnstampedBinaryReportsItsModuleVersion(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}
	if got := resolve("", info); got != "v0.9.0" {
		t.Fatalf("resolve = %q, want v0.9.0", got)
	}
}

func TestACheckoutBuildSaysDev(t *testing.T) {
	for _, info := range []*debug.BuildInfo{nil, {Main: debug.Module{Version: "(devel)"}}, {}} {
		if got := resolve("", info); got != "dev" {
			t.Fatalf("resolve(%+v) = %q, want dev", info, got)
		}
	}
}

func TestAPersonSeesTheNameAndAScriptTheBareVersion(t *testing.T) {
	if got := Line("nibrunnerd", true); got != "nibrunnerd "+String() {
		t.Fatalf("at a terminal: %q", got)
	}
	if got := Line("nibrunnerd", false); got != String() {
		t.Fatalf("into a pipe: %q, want the bare %q", got, String())
	}
}
