package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
)

// GuestImageDir is the folder the tests of every package build the guest
// image into, so one `go test ./...` builds it once. It is keyed by the
// checkout the test runs from: a build from another checkout (another
// nibrun-init, so another image version) removes older versions in its
// folder, which must not be one a running test of this checkout boots.
func GuestImageDir() string {
	_, file, _, _ := runtime.Caller(0)
	sum := sha256.Sum256([]byte(filepath.Dir(file)))
	return filepath.Join(os.TempDir(), "nibrun-guestimage-test-"+hex.EncodeToString(sum[:])[:12])
}
