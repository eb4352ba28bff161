package localnet

import (
	"fmt"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// What the replica certifies: the state tree behind every certificate, and
// how long a call's status is kept. The node's signature on query answers is
// agent.SignQueryResponse.

// RequestRetention is how long a finished call's status stays readable:
// past the longest ingress expiry, as on a replica, after which a replay is
// refused as expired anyway.
const RequestRetention = MaxIngressExpiry + 2*PermittedDrift

// forgetLocked drops the status of calls finished longer ago than
// RequestRetention, so a long-running devnet does not grow without bound.
func (s *Server) forgetLocked() {
	cutoff := s.now().Add(-RequestRetention)
	for rid, st := range s.requests {
		if st.status != "processing" && st.updated.Before(cutoff) {
			delete(s.requests, rid)
		}
	}
}

// leaf is one extra value of the state tree.
type leaf struct {
	path  [][]byte
	value []byte
}

// DataCertificate certifies data as canister's certified data
// (/canister/<id>/certified_data), as ic0.data_certificate_copy gives a
// canister in a query: a certificate of its subnet's state tree pruned to
// the time and that leaf, with the subnet's delegation (flat layout) when
// it is not the root subnet.
func (s *Server) DataCertificate(canister principal.Principal, data []byte) ([]byte, error) {
	by := s.subnetOf(canister)
	if by == nil {
		return nil, fmt.Errorf("certified data of %s: no subnet hosts it", canister)
	}
	path := [][]byte{[]byte("canister"), canister.Bytes(), []byte("certified_data")}
	return s.certify(by, by.flat, [][][]byte{certificate.Path("time"), path}, leaf{path, data})
}

// certify builds the state tree of subnet by (time, the topology of every
// subnet, the status of every call it ran, and extra), prunes it to paths
// and signs it with the subnet's key, attaching delegation (nil for the
// root subnet).
func (s *Server) certify(by *subnet, delegation *certificate.Delegation, paths [][][]byte, extra ...leaf) ([]byte, error) {
	b := certificate.NewBuilder()
	if err := b.Insert(certificate.Path("time"), leb128.AppendUnsigned(nil, uint64(s.now().UnixNano()))); err != nil {
		return nil, fmt.Errorf("build state tree: %w", err)
	}
	// insert keeps the first error: every path here is built by this
	// function, so an error is a bug, but it must fail the request, not
	// panic in the handler.
	var insertErr error
	insert := func(path [][]byte, v []byte) {
		if insertErr == nil {
			insertErr = b.Insert(path, v)
		}
	}
	for _, sn := range s.subnets {
		sid := sn.id.Bytes()
		ranges, err := certificate.EncodeRanges(sn.ranges)
		if err != nil {
			return nil, fmt.Errorf("encode canister ranges: %w", err)
		}
		insert([][]byte{[]byte("subnet"), sid, []byte("public_key")}, sn.key.PublicKey().DER())
		insert([][]byte{[]byte("subnet"), sid, []byte("canister_ranges")}, ranges)
		insert([][]byte{[]byte("subnet"), sid, []byte("node"), sn.node.Sender().Bytes(), []byte("public_key")}, sn.node.PublicKeyDER())
		insert([][]byte{[]byte("canister_ranges"), sid, sn.ranges[0].From.Bytes()}, ranges)
	}
	s.mu.Lock()
	for rid, st := range s.requests {
		if st.subnet != by {
			continue
		}
		base := [][]byte{[]byte("request_status"), append([]byte(nil), rid[:]...)}
		at := func(label string, v []byte) {
			insert(append(append([][]byte{}, base...), []byte(label)), v)
		}
		at("status", []byte(st.status))
		switch st.status {
		case "replied":
			at("reply", st.reply)
		case "rejected":
			at("reject_code", leb128.AppendUnsigned(nil, uint64(st.reject.Code)))
			at("reject_message", []byte(st.reject.Message))
			at("error_code", []byte(st.reject.ErrorCode))
		}
	}
	s.mu.Unlock()
	for _, l := range extra {
		insert(l.path, l.value)
	}
	if insertErr != nil {
		return nil, fmt.Errorf("build state tree: %w", insertErr)
	}
	tree := certificate.Prune(b.Build(), paths...)
	cert, err := certificate.Sign(by.key, tree, delegation)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	return cert.Marshal()
}
