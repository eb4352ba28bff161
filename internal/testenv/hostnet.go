package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// LockHostNetwork holds, until the test ends, the one lock that every test
// which applies the daemon's network (the nibrun nftables table, taps) in
// the namespace it runs in takes first. go test runs packages as separate
// processes at once, and the namespace has one nibrun table: two such
// tests at a time would each replace the other's rules.
func LockHostNetwork(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "nibrun-test-host-network.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("open the host network test lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("take the host network test lock: %v", err)
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
}
