package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"alpnib.dev/ic/agent"
)

// Network is the network a state file's proposals were made on. Its
// identity is the root key: the key every certificate of the network is
// checked against, which a network keeps whatever host serves it
// (icp-api.io and ic0.app are one network) and which a new devnet does not
// share with an old one on the same port. The host is what alp talked to
// when it bound the file, kept to name the network to a person.
type Network struct {
	// Name is "mainnet" for the IC mainnet, else empty.
	Name string `json:"name,omitempty"`
	// Host is the IC HTTP interface the file was bound through.
	Host string `json:"host"`
	// RootKeySHA256 is the lowercase hex sha256 of the DER root key.
	RootKeySHA256 string `json:"root_key_sha256"`

	// From says where alp took Host from (--host, $ALP_HOST,
	// provider.host, the default); it is not recorded.
	From string `json:"-"`

	unknown unknownFields
}

// Mainnet is the name of the IC mainnet in state.json.
const Mainnet = "mainnet"

// NetworkOf is the network whose root key is rootKeyDER, reached at host;
// mainnet says whether that key is the mainnet's.
func NetworkOf(host string, rootKeyDER []byte, mainnet bool) Network {
	sum := sha256.Sum256(rootKeyDER)
	n := Network{Host: host, RootKeySHA256: hex.EncodeToString(sum[:])}
	if mainnet {
		n.Name = Mainnet
	}
	return n
}

// String names the network for a person: "mainnet (https://icp-api.io)",
// or the host and the start of its root key's fingerprint.
func (n Network) String() string {
	if n.Name != "" {
		return fmt.Sprintf("%s (%s)", n.Name, n.Host)
	}
	return fmt.Sprintf("%s (root key sha256 %s…)", n.Host, ShortHash(n.RootKeySHA256))
}

// Same reports whether n and o are one network: the same root key, or,
// when either lacks one (a hand-written record), the same host.
func (n Network) Same(o Network) bool {
	if n.RootKeySHA256 != "" && o.RootKeySHA256 != "" {
		return n.RootKeySHA256 == o.RootKeySHA256
	}
	return sameHost(n.Host, o.Host)
}

// sameHost reports whether two host URLs name one endpoint: equal once
// normalised, or both mainnet's.
func sameHost(a, b string) bool {
	ua, errA := agent.ParseURL(a)
	ub, errB := agent.ParseURL(b)
	if errA != nil || errB != nil {
		return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
	}
	if agent.IsMainnetHost(ua.Hostname()) && agent.IsMainnetHost(ub.Hostname()) {
		return true
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// ForeignNetworkError refuses a state file recorded against another
// network than the one alp talks to.
type ForeignNetworkError struct {
	Path string
	// Recorded is the network the file records; for a file written before
	// alp recorded one, the host of RecordedBy, one of its proposals.
	Recorded   Network
	RecordedBy string
	Current    Network
}

func (e *ForeignNetworkError) Error() string {
	recorded := "records network " + e.Recorded.String()
	if e.RecordedBy != "" {
		recorded = fmt.Sprintf("records proposal %q as made on %s", e.RecordedBy, e.Recorded.Host)
	}
	from := ""
	if e.Current.From != "" {
		from = ", from " + e.Current.From
	}
	return fmt.Sprintf("state %s %s, and alp is talking to %s%s; to use this file, point --host (or $ALP_HOST, provider.host) at %s; for this network, give --state another file",
		e.Path, recorded, e.Current, from, e.Recorded.Host)
}

// Bind ties s to the network n: it refuses, with a *ForeignNetworkError
// naming path, a state recorded against another network, and records n in
// a state that has no network yet (it reaches the file with the next
// save). A file written before networks were recorded is held to the hosts
// its proposals were made on. Bind reports whether it recorded n.
func (s *State) Bind(path string, n Network) (bool, error) {
	if s.Network != nil {
		if !s.Network.Same(n) {
			return false, &ForeignNetworkError{Path: path, Recorded: *s.Network, Current: n}
		}
		return false, nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.Proposals)) {
		if h := s.Proposals[name].Host; h != "" && !sameHost(h, n.Host) {
			return false, &ForeignNetworkError{Path: path, Recorded: Network{Host: h}, RecordedBy: name, Current: n}
		}
	}
	rec := n
	rec.From = ""
	s.Network = &rec
	return true, nil
}
