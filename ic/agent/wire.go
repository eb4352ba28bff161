package agent

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/ic/internal/cborx"
)

// The response bodies of the HTTP interface. They are exported so that a
// local replica can produce exactly what this agent reads.

// Status is the body of GET /api/v2/status. Only RootKey is specified by the
// interface spec; the rest are what replicas report in practice.
type Status struct {
	ICAPIVersion        string `cbor:"ic_api_version,omitempty"`
	RootKey             []byte `cbor:"root_key,omitempty"`
	ImplVersion         string `cbor:"impl_version,omitempty"`
	ImplHash            string `cbor:"impl_hash,omitempty"`
	ReplicaHealthStatus string `cbor:"replica_health_status,omitempty"`
	CertifiedHeight     uint64 `cbor:"certified_height,omitempty"`
}

// DecodeStatus parses a status body. Unknown fields are ignored.
func DecodeStatus(body []byte) (*Status, error) {
	var s Status
	if err := cborx.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("%w: status: %v", ErrMalformedResponse, err)
	}
	return &s, nil
}

// Marshal encodes the status as self-described CBOR.
func (s *Status) Marshal() ([]byte, error) { return cborx.Marshal(s) }

// Response status words.
const (
	StatusReplied                = "replied"
	StatusRejected               = "rejected"
	StatusNonReplicatedRejection = "non_replicated_rejection"
)

// QueryResponse is the body of a query reply: Status is "replied" with
// Reply, or "rejected" with the reject fields.
type QueryResponse struct {
	Status        string          `cbor:"status"`
	Reply         *QueryReply     `cbor:"reply,omitempty"`
	RejectCode    uint64          `cbor:"reject_code,omitempty"`
	RejectMessage string          `cbor:"reject_message,omitempty"`
	ErrorCode     string          `cbor:"error_code,omitempty"`
	Signatures    cbor.RawMessage `cbor:"signatures,omitempty"`
}

// QueryReply holds the Candid-encoded reply.
type QueryReply struct {
	Arg []byte `cbor:"arg"`
}

// Marshal encodes the response as self-described CBOR.
func (q *QueryResponse) Marshal() ([]byte, error) { return cborx.Marshal(q) }

// CallResponse is the body of a 200 answer to a v3 call: Status "replied"
// with a certificate holding the request's status, or
// "non_replicated_rejection" with the reject fields.
type CallResponse struct {
	Status        string `cbor:"status"`
	Certificate   []byte `cbor:"certificate,omitempty"`
	RejectCode    uint64 `cbor:"reject_code,omitempty"`
	RejectMessage string `cbor:"reject_message,omitempty"`
	ErrorCode     string `cbor:"error_code,omitempty"`
}

// Marshal encodes the response as self-described CBOR.
func (c *CallResponse) Marshal() ([]byte, error) { return cborx.Marshal(c) }

// ReadStateResponse is the body of a read_state answer.
type ReadStateResponse struct {
	Certificate []byte `cbor:"certificate"`
}

// Marshal encodes the response as self-described CBOR.
func (r *ReadStateResponse) Marshal() ([]byte, error) { return cborx.Marshal(r) }

func rejectFrom(code uint64, msg, errCode string, rid *RequestID) *RejectError {
	return &RejectError{Code: RejectCode(code), Message: msg, ErrorCode: errCode, RequestID: rid}
}
