package devnet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// After a membership change a node that joined reports its new subnet's
// version, and a node that left reports the unassigned version; a node
// where the fleet put it keeps the fleet's version (seeded drift stays).
func TestNodeVersionsFollowMembershipChanges(t *testing.T) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	const previous = "b14a223a8fa8498a3f75f86d0622d37e24a0a780"
	sub := &f.Subnets[0]
	leaver, joiner := sub.Members[0], ""
	inSubnet := map[string]bool{}
	for _, m := range sub.Members {
		inSubnet[m] = true
	}
	for i := range f.Nodes {
		if n := &f.Nodes[i]; !inSubnet[n.ID] && n.IsReachable() && joiner == "" {
			joiner, n.Version = n.ID, previous // an unassigned node on the previous release
		}
	}
	f.UnassignedVersion = previous
	d, err := Start(context.Background(), Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(d.NodeCAPath)
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	runs := func(node string) string {
		t.Helper()
		code, body := get(t, c, d.NodeStatusURLs[node]+"/api/v2/status")
		var st struct {
			ImplVersion string `cbor:"impl_version"`
		}
		if code != 200 || cbor.Unmarshal(body, &st) != nil {
			t.Fatalf("status of %s: %d", node, code)
		}
		return st.ImplVersion
	}
	if runs(joiner) != previous || runs(leaver) != sub.Version {
		t.Fatalf("before: joiner %s, leaver %s", runs(joiner), runs(leaver))
	}
	err = d.Registry.ChangeSubnetMembership(nns.ChangeSubnetMembershipPayload{SubnetID: principal.MustDecode(sub.ID),
		NodeIDsAdd: []principal.Principal{principal.MustDecode(joiner)}, NodeIDsRemove: []principal.Principal{principal.MustDecode(leaver)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := runs(joiner); got != sub.Version {
		t.Errorf("the node that joined runs %s, want the subnet's %s", got, sub.Version)
	}
	if got := runs(leaver); got != previous {
		t.Errorf("the node that left runs %s, want the unassigned %s", got, previous)
	}
}
