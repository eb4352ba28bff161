package testenv

import (
	"os"
	"testing"
)

// NetGuard reports whether this process runs under the network guard
// (scripts/netguard.sh, which make test, make demo and make bench use): a
// network namespace of its own whose only interface is loopback, so a
// dial to any other address fails at once.
func NetGuard() bool { return os.Getenv("NIB_NET_GUARD") == "1" }

// RequireNetGuard needs the network guard: for a test whose code under
// test would dial a real outside address (a mainnet host, say) were it
// not stopped, so that the dial fails at once instead of sending packets.
func RequireNetGuard(t testing.TB) {
	t.Helper()
	if !NetGuard() {
		Missing(t, "needs the network guard (run it with scripts/netguard.sh, as make test does; NIB_NET_GUARD=1 is not set)")
	}
}
