package registrypb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
)

// protocVersion is the header line that names the protoc that ran; it is
// the one line allowed to differ between machines.
var protocVersion = regexp.MustCompile(`(?m)^// \tprotoc +v.*$`)

// TestTheGeneratedCodeIsUpToDate regenerates the Go code from the .proto
// files into a temporary folder, with protoc-gen-go built from the version
// go.mod pins, and compares it with the committed files.
func TestTheGeneratedCodeIsUpToDate(t *testing.T) {
	protoc := testenv.RequireCommand(t, "protoc")
	if testing.Short() {
		t.Skip("builds protoc-gen-go")
	}
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "protoc-gen-go")
	if out, err := exec.Command("go", "build", "-o", plugin, "google.golang.org/protobuf/cmd/protoc-gen-go").CombinedOutput(); err != nil {
		t.Fatalf("build protoc-gen-go: %v\n%s", err, out)
	}
	protos, err := filepath.Glob("*.proto")
	if err != nil || len(protos) == 0 {
		t.Fatalf("no .proto files: %v", err)
	}
	args := append([]string{"--proto_path=.", "--plugin=protoc-gen-go=" + plugin, "--go_out=" + tmp, "--go_opt=paths=source_relative"}, protos...)
	if out, err := exec.Command(protoc, args...).CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	for _, p := range protos {
		name := strings.TrimSuffix(p, ".proto") + ".pb.go"
		want, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s is not committed: run go generate ./ic/nns/registrypb", name)
		}
		if !bytes.Equal(protocVersion.ReplaceAll(got, nil), protocVersion.ReplaceAll(want, nil)) {
			t.Errorf("%s is stale: run go generate ./ic/nns/registrypb", name)
		}
	}
}
