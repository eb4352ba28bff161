package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSleepWithNoDaemonSaysNoneIsListeningAndHowToStartOne(t *testing.T) {
	root := t.TempDir()
	config := fmt.Sprintf(`max_apps = 10
[paths]
state_dir = "%[1]s/state"
runtime_dir = "%[1]s/run"
snapshot_dir = "%[1]s/snap"
guest_image_dir = "%[1]s/guest"
desired_state_file = "%[1]s/control/desired.json"
[artifacts]
store_url = "%[1]s/store"
[volumes]
backend = "local-file"
storage_prefix = "%[1]s/volumes"
[exports]
store_url = "%[1]s/exports"
staging_dir = "%[1]s/staging"
[network]
denied_egress_addresses_v4 = []
denied_egress_addresses_v6 = []
`, root)
	cfgPath := filepath.Join(root, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"sleep", "wake"} {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{verb, "counter", "--config", cfgPath})
		err := cmd.Execute()
		want := "no nibrunnerd is listening on " + filepath.Join(root, "run", "nibrunnerd.sock") + "; start it with nibrunnerd serve"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("%s: %v, want it to start %q", verb, err, want)
		}
		if out.Len() != 0 {
			t.Fatalf("%s printed %q as if it worked", verb, out.String())
		}
	}
}
