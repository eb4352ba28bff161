package state

import (
	"errors"
	"strings"
	"testing"
)

func TestANetworkIsItsRootKeyNotItsHost(t *testing.T) {
	devnet := NetworkOf("http://127.0.0.1:39167", []byte("key one"), false)
	s := New()
	if bound, err := s.Bind("state.json", devnet); !bound || err != nil {
		t.Fatalf("a new state binds: %v %v", bound, err)
	}
	// the same network through another host is the same network
	if _, err := s.Bind("state.json", NetworkOf("http://localhost:8080", []byte("key one"), false)); err != nil {
		t.Fatalf("same key, other host: %v", err)
	}
	// a new devnet on the same port is another network
	_, err := s.Bind("state.json", NetworkOf("http://127.0.0.1:39167", []byte("key two"), false))
	var foreign *ForeignNetworkError
	if !errors.As(err, &foreign) || !strings.Contains(err.Error(), "state state.json records network http://127.0.0.1:39167 (root key sha256 ") {
		t.Fatalf("another key on the same host: %v", err)
	}
}

func TestTheRecordedNetworkRoundTripsWithWhatAlpDoesNotKnow(t *testing.T) {
	doc := `{"network": {"name": "mainnet", "host": "https://icp-api.io", "root_key_sha256": "ab", "region": "eu"}, "proposals": {}}`
	s, err := Parse("state.json", []byte(doc))
	if err != nil || s.Network == nil || s.Network.Name != Mainnet {
		t.Fatalf("parse: %+v %v", s.Network, err)
	}
	out, err := s.Marshal()
	if err != nil || !strings.Contains(string(out), `"region": "eu"`) || !strings.Contains(string(out), `"root_key_sha256": "ab"`) {
		t.Fatalf("written back:\n%s", out)
	}
}

func TestAStateWithoutANetworkIsHeldToItsProposalsHosts(t *testing.T) {
	s := New()
	s.Proposals["p"] = &Proposal{Host: "https://icp-api.io"}
	if _, err := s.Bind("state.json", NetworkOf("https://ic0.app", []byte("mainnet key"), true)); err != nil {
		t.Fatalf("mainnet's hosts are one network: %v", err)
	}
	s = New()
	s.Proposals["p"] = &Proposal{Host: "http://127.0.0.1:39167"}
	if _, err := s.Bind("state.json", NetworkOf("http://127.0.0.1:44431", []byte("k"), false)); err == nil ||
		!strings.Contains(err.Error(), `records proposal "p" as made on http://127.0.0.1:39167, and alp is talking to http://127.0.0.1:44431`) {
		t.Fatalf("another host: %v", err)
	}
}
