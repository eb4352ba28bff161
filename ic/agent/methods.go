package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// Status fetches GET /api/v2/status.
func (a *Agent) Status(ctx context.Context) (*Status, error) {
	const path = "/api/v2/status"
	r, err := a.retrying(ctx, path, func() (*response, error) { return a.do(ctx, http.MethodGet, path, nil) })
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, httpError("GET", path, r)
	}
	return DecodeStatus(r.body)
}

// Query calls a query method and returns its Candid reply.
func (a *Agent) Query(ctx context.Context, canister principal.Principal, method string, arg []byte) ([]byte, error) {
	return a.QueryWithEffectiveID(ctx, canister, canister, method, arg)
}

// QueryWithEffectiveID is Query for methods whose effective canister id is
// not the callee, such as those of the management canister.
//
// The node signatures on the answer are checked against the subnet's
// certified node keys unless Config.SkipQuerySignatures is set; without the
// check the answer is only as trustworthy as the node that gave it. Use Call
// when the answer must go through consensus.
func (a *Agent) QueryWithEffectiveID(ctx context.Context, effective, canister principal.Principal, method string, arg []byte) ([]byte, error) {
	body, rid, err := a.sign(Request{Type: TypeQuery, IngressExpiry: a.expiry(), CanisterID: canister, MethodName: method, Arg: arg})
	if err != nil {
		return nil, err
	}
	r, _, path, err := a.post(ctx, kindQuery, "canister/"+effective.String(), "query", body)
	if err != nil {
		return nil, fmt.Errorf("query %s.%s: %w", canister, method, err)
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("query %s.%s: %w", canister, method, httpError("POST", path, r))
	}
	var q QueryResponse
	if err := cborx.Unmarshal(r.body, &q); err != nil {
		return nil, fmt.Errorf("query %s.%s: %w: %v", canister, method, ErrMalformedResponse, err)
	}
	if !a.cfg.SkipQuerySignatures && (q.Status == StatusReplied || q.Status == StatusRejected) {
		if err := a.verifyQuerySignatures(ctx, effective, rid, &q); err != nil {
			return nil, fmt.Errorf("query %s.%s: %w", canister, method, err)
		}
	}
	switch q.Status {
	case StatusReplied:
		if q.Reply == nil {
			return nil, fmt.Errorf("query %s.%s: %w: replied without reply", canister, method, ErrMalformedResponse)
		}
		return q.Reply.Arg, nil
	case StatusRejected:
		return nil, fmt.Errorf("query %s.%s: %w", canister, method, rejectFrom(q.RejectCode, q.RejectMessage, q.ErrorCode, nil))
	}
	return nil, fmt.Errorf("query %s.%s: %w: status %q", canister, method, ErrMalformedResponse, q.Status)
}

// Call calls an update method and waits for its certified reply: one
// synchronous v4 call (v3 or the asynchronous v2 on a host without it),
// polling read_state when the replica answers 202 (still running) or the
// call was asynchronous.
func (a *Agent) Call(ctx context.Context, canister principal.Principal, method string, arg []byte) ([]byte, error) {
	return a.CallWithEffectiveID(ctx, canister, canister, method, arg)
}

// CallWithEffectiveID is Call for methods whose effective canister id is not
// the callee, such as those of the management canister.
func (a *Agent) CallWithEffectiveID(ctx context.Context, effective, canister principal.Principal, method string, arg []byte) ([]byte, error) {
	reply, err := a.call(ctx, effective, canister, method, arg)
	if err != nil {
		return nil, fmt.Errorf("call %s.%s: %w", canister, method, err)
	}
	return reply, nil
}

func (a *Agent) call(ctx context.Context, effective, canister principal.Principal, method string, arg []byte) ([]byte, error) {
	nonce, err := a.nonce()
	if err != nil {
		return nil, err
	}
	req := Request{Type: TypeCall, IngressExpiry: a.expiry(), CanisterID: canister, MethodName: method, Arg: arg, Nonce: nonce}
	body, rid, err := a.sign(req)
	if err != nil {
		return nil, err
	}
	r, version, path, err := a.post(ctx, kindCall, "canister/"+effective.String(), "call", body)
	if err != nil {
		return nil, err
	}
	switch r.status {
	case http.StatusAccepted:
		return a.Wait(ctx, effective, rid, req.IngressExpiry)
	case http.StatusOK:
	default:
		return nil, httpError("POST", path, r)
	}
	var cr CallResponse
	if err := cborx.Unmarshal(r.body, &cr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedResponse, err)
	}
	switch cr.Status {
	case StatusNonReplicatedRejection:
		return nil, rejectFrom(cr.RejectCode, cr.RejectMessage, cr.ErrorCode, &rid)
	case StatusReplied:
	default:
		return nil, fmt.Errorf("%w: call status %q", ErrMalformedResponse, cr.Status)
	}
	v, err := a.getVerifier(ctx)
	if err != nil {
		return nil, err
	}
	cert, err := v.Verify(cr.Certificate, certificate.ForCanisterIn(effective, version.layout))
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", rid, err)
	}
	reply, done, err := RequestResult(cert.Tree, rid)
	if done {
		return reply, err
	}
	return a.Wait(ctx, effective, rid, req.IngressExpiry)
}

// Wait polls read_state for a submitted call until it is replied, rejected
// or done, backing off between polls, until ctx ends or the request expires
// without having been received.
func (a *Agent) Wait(ctx context.Context, effective principal.Principal, rid RequestID, ingressExpiry uint64) ([]byte, error) {
	interval := a.cfg.PollInterval
	paths := [][][]byte{{[]byte("request_status"), rid[:]}}
	for {
		cert, err := a.ReadState(ctx, effective, paths)
		if err != nil {
			var he *HTTPError
			if !errors.As(err, &he) || (he.StatusCode < 500 && he.StatusCode != http.StatusTooManyRequests) {
				return nil, fmt.Errorf("poll request %s: %w", rid, err)
			}
			// A 5xx or 429 from a boundary node is worth another try.
		} else {
			reply, done, err := RequestResult(cert.Tree, rid)
			if done {
				return reply, err
			}
			if _, st := cert.Tree.Lookup([]byte("request_status"), rid[:], []byte("status")); st == certificate.Absent {
				if t, terr := cert.Time(); terr == nil && uint64(t.UnixNano()) > ingressExpiry {
					return nil, fmt.Errorf("request %s: %w", rid, ErrExpired)
				}
			}
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("poll request %s: %w", rid, ctx.Err())
		case <-timer.C:
		}
		interval = min(interval*3/2, a.cfg.MaxPollInterval)
	}
}

// RequestResult reads /request_status/<rid> from a verified tree. done is
// false while the request is unknown, received or processing; once done, the
// result is the reply, a *RejectError, or ErrRequestDone.
func RequestResult(tree *certificate.Tree, rid RequestID) (reply []byte, done bool, err error) {
	prefix := []byte("request_status")
	status, st := tree.Lookup(prefix, rid[:], []byte("status"))
	if st != certificate.Found {
		return nil, false, nil
	}
	switch string(status) {
	case "replied":
		r, st := tree.Lookup(prefix, rid[:], []byte("reply"))
		if st != certificate.Found {
			return nil, true, fmt.Errorf("%w: request %s replied but reply is %s", ErrMalformedResponse, rid, st)
		}
		return r, true, nil
	case "rejected":
		codeLEB, st := tree.Lookup(prefix, rid[:], []byte("reject_code"))
		if st != certificate.Found {
			return nil, true, fmt.Errorf("%w: request %s rejected without reject_code", ErrMalformedResponse, rid)
		}
		code, _, err := leb128.Unsigned(codeLEB)
		if err != nil {
			return nil, true, fmt.Errorf("%w: reject_code: %v", ErrMalformedResponse, err)
		}
		msg, _ := tree.Lookup(prefix, rid[:], []byte("reject_message"))
		errCode, _ := tree.Lookup(prefix, rid[:], []byte("error_code"))
		return nil, true, rejectFrom(code, string(msg), string(errCode), &rid)
	case "done":
		return nil, true, fmt.Errorf("request %s: %w", rid, ErrRequestDone)
	case "received", "processing":
		return nil, false, nil
	}
	return nil, true, fmt.Errorf("%w: request %s has status %q", ErrMalformedResponse, rid, status)
}

// ReadState reads paths of the state tree through a canister's subnet and
// returns the verified certificate; look values up in its Tree.
func (a *Agent) ReadState(ctx context.Context, canister principal.Principal, paths [][][]byte) (*certificate.Certificate, error) {
	return a.readState(ctx, kindReadState, "canister/"+canister.String(), paths, func(l certificate.RangesLayout) certificate.Scope {
		return certificate.ForCanisterIn(canister, l)
	})
}

// ReadSubnetState reads paths of a subnet's state tree (such as
// /subnet/<id>/node) and returns the verified certificate.
func (a *Agent) ReadSubnetState(ctx context.Context, subnet principal.Principal, paths [][][]byte) (*certificate.Certificate, error) {
	return a.readState(ctx, kindSubnetReadState, "subnet/"+subnet.String(), paths, func(certificate.RangesLayout) certificate.Scope {
		return certificate.ForSubnet(subnet)
	})
}

// readState posts a read_state to the newest version the host serves and
// verifies the answer in the scope that version calls for.
func (a *Agent) readState(ctx context.Context, kind endpointKind, target string, paths [][][]byte, scope func(certificate.RangesLayout) certificate.Scope) (*certificate.Certificate, error) {
	if paths == nil {
		paths = [][][]byte{}
	}
	body, _, err := a.sign(Request{Type: TypeReadState, IngressExpiry: a.expiry(), Paths: paths})
	if err != nil {
		return nil, err
	}
	r, version, path, err := a.post(ctx, kind, target, "read_state", body)
	if err != nil {
		return nil, fmt.Errorf("read_state: %w", err)
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("read_state: %w", httpError("POST", path, r))
	}
	var rs ReadStateResponse
	if err := cborx.Unmarshal(r.body, &rs); err != nil {
		return nil, fmt.Errorf("read_state: %w: %v", ErrMalformedResponse, err)
	}
	v, err := a.getVerifier(ctx)
	if err != nil {
		return nil, err
	}
	cert, err := v.Verify(rs.Certificate, scope(version.layout))
	if err != nil {
		return nil, fmt.Errorf("read_state: %w", err)
	}
	return cert, nil
}
