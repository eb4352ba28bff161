package localnet

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/principal"
)

// A Server is one subnet, the root one, or two: the root subnet (which hosts
// the NNS canisters, as on mainnet) and an application subnet whose
// certificates carry a delegation from the root subnet. The delegation comes
// in the two layouts the HTTP interface has: the canister ranges at
// /subnet/<id>/canister_ranges for the deprecated endpoints (v3 call, v2
// read_state, v2 query) and under /canister_ranges/<id> for the current ones
// (v4 call, v3 read_state, v3 query), so an agent's delegation code runs
// offline exactly as against mainnet.

// RootSubnetLastCanister is the last canister id (by index) of the root
// subnet when there are two: it holds the first 2^20 ids, so the registry
// (0) and governance (1) live there and everything from 2^20 on lives on
// the other subnet.
const RootSubnetLastCanister = 1<<20 - 1

// subnet is one subnet of the local network: its threshold key (the root
// key for the root subnet), its one node, the canister ids it hosts, and
// for a subnet other than the root one, its delegation in each layout.
type subnet struct {
	id     principal.Principal
	key    *certificate.SecretKey
	node   *identity.Ed25519
	ranges []certificate.CanisterRange
	// flat and tree are nil for the root subnet.
	flat, tree *certificate.Delegation
}

func (sn *subnet) root() bool { return sn.flat == nil }

// delegation is what the subnet attaches to a certificate answering an
// endpoint that reads its ranges in layout.
func (sn *subnet) delegation(layout certificate.RangesLayout) *certificate.Delegation {
	if layout == certificate.TreeRanges {
		return sn.tree
	}
	return sn.flat
}

func (sn *subnet) hosts(canister principal.Principal) bool {
	return slices.ContainsFunc(sn.ranges, func(r certificate.CanisterRange) bool { return r.Contains(canister) })
}

// newSubnets makes n subnets (1 or 2) under a fresh root key.
func (s *Server) newSubnets(n int) error {
	if n < 1 || n > 2 {
		return fmt.Errorf("localnet: %d subnets: want 1 or 2", n)
	}
	all := certificate.CanisterRange{From: principal.CanisterID(0), To: principal.CanisterID(1<<64 - 1)}
	ranges := [][]certificate.CanisterRange{{all}}
	if n == 2 {
		ranges = [][]certificate.CanisterRange{
			{{From: principal.CanisterID(0), To: principal.CanisterID(RootSubnetLastCanister)}},
			{{From: principal.CanisterID(RootSubnetLastCanister + 1), To: all.To}},
		}
	}
	for i := range n {
		key, err := certificate.GenerateKey(rand.Reader)
		if err != nil {
			return fmt.Errorf("localnet: generate subnet key: %w", err)
		}
		node, err := identity.GenerateEd25519(rand.Reader)
		if err != nil {
			return fmt.Errorf("localnet: generate node key: %w", err)
		}
		sn := &subnet{key: key, node: node, ranges: ranges[i]}
		if i == 0 {
			// The root subnet's id is its key's self-authenticating
			// principal (docs/decisions.md).
			sn.id = principal.SelfAuthenticating(key.PublicKey().DER())
		} else {
			sn.id = principal.SelfAuthenticating(append([]byte("alp-localnet subnet "), byte('0'+i)))
			root := s.subnets[0].key
			for _, l := range []struct {
				layout certificate.RangesLayout
				into   **certificate.Delegation
			}{{certificate.FlatRanges, &sn.flat}, {certificate.TreeRanges, &sn.tree}} {
				if *l.into, err = certificate.DelegateIn(l.layout, root, sn.id, key.PublicKey(), sn.ranges, s.now()); err != nil {
					return fmt.Errorf("localnet: delegate to subnet %s: %w", sn.id, err)
				}
			}
		}
		s.subnets = append(s.subnets, sn)
	}
	return nil
}

// subnetOf is the subnet hosting canister, nil when none does.
func (s *Server) subnetOf(canister principal.Principal) *subnet {
	for _, sn := range s.subnets {
		if sn.hosts(canister) {
			return sn
		}
	}
	return nil
}

// subnetByID is the subnet with that id, nil when there is none.
func (s *Server) subnetByID(id principal.Principal) *subnet {
	for _, sn := range s.subnets {
		if sn.id == id {
			return sn
		}
	}
	return nil
}

// subnetByBytes is subnetByID for a path label, which may be any bytes.
func (s *Server) subnetByBytes(id []byte) *subnet {
	for _, sn := range s.subnets {
		if bytes.Equal(sn.id.Bytes(), id) {
			return sn
		}
	}
	return nil
}

// SubnetIDs lists the subnets, the root subnet first.
func (s *Server) SubnetIDs() []principal.Principal {
	out := make([]principal.Principal, len(s.subnets))
	for i, sn := range s.subnets {
		out[i] = sn.id
	}
	return out
}

// SubnetOf is the subnet hosting canister, and false when none does.
func (s *Server) SubnetOf(canister principal.Principal) (principal.Principal, bool) {
	if sn := s.subnetOf(canister); sn != nil {
		return sn.id, true
	}
	return principal.Principal{}, false
}

// readScope is what a read_state may reveal: the endpoint's version and
// whether it is the subnet form, and the subnet that answers.
type readScope struct {
	v3     bool // v3 (current) rather than v2 (deprecated)
	subnet bool // /api/vN/subnet/<id>/read_state
	by     *subnet
}

// paths checks the requested paths against the read_state rules of the
// spec (https-interface.md, "Request: Read state") and rewrites /subnet and
// /subnet/<id> into what they reveal: every subnet's public key, a subnet's
// canister_ranges leaf only at v2 or for the root subnet, and node keys
// only of the subnet answering. A path that cannot be requested is an error.
func (s *Server) paths(rs readScope, requested [][][]byte) ([][][]byte, error) {
	var out [][][]byte
	for _, p := range requested {
		if len(p) == 0 {
			continue
		}
		switch string(p[0]) {
		case "canister_ranges":
			if !rs.subnet {
				return nil, fmt.Errorf("/canister_ranges can only be requested at /api/v2|v3/subnet/<id>/read_state")
			}
			out = append(out, p)
		case "subnet":
			if len(p) >= 3 && string(p[2]) == "canister_ranges" && rs.v3 {
				if sn := s.subnetByBytes(p[1]); sn == nil || !sn.root() {
					return nil, fmt.Errorf("/subnet/<id>/canister_ranges of a subnet other than the root one cannot be requested at v3; read /canister_ranges/<id> at /api/v3/subnet/<id>/read_state")
				}
			}
			if len(p) >= 3 {
				out = append(out, p)
				continue
			}
			for _, sn := range s.subnets {
				if len(p) == 2 && !bytes.Equal(p[1], sn.id.Bytes()) {
					continue
				}
				base := [][]byte{[]byte("subnet"), sn.id.Bytes()}
				reveal := []string{"public_key"}
				if !rs.v3 || sn.root() {
					reveal = append(reveal, "canister_ranges")
				}
				if sn == rs.by {
					reveal = append(reveal, "node")
				}
				for _, l := range reveal {
					out = append(out, append(slices.Clone(base), []byte(l)))
				}
			}
			if len(p) == 2 && s.subnetByBytes(p[1]) == nil {
				out = append(out, p) // an unknown subnet: prove it absent
			}
		default:
			out = append(out, p)
		}
	}
	return out, nil
}
