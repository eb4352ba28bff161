package agent

import (
	"context"
	"net/http"
	"sync/atomic"

	"alpnib.dev/ic/certificate"
)

// The HTTP interface has grown new versions of its endpoints (interface
// spec 0.50.0: v4 call, v3 read_state and v3 query; v3 call, v2 read_state
// and v2 query deprecated). They take the same envelopes; what differs is
// where a delegation's canister ranges are certified: under
// /canister_ranges/<subnet> for the current ones, under
// /subnet/<subnet>/canister_ranges for the deprecated ones. The agent tries
// the current version first and steps down to an older one only when the
// host answers 404 or 405 for it, remembering the step for every later
// request to that host (an Agent talks to one host).

// apiVersion is one version of an endpoint.
type apiVersion struct {
	name   string // "v4"
	layout certificate.RangesLayout
}

// endpointKind is one of the requests the agent makes.
type endpointKind int

const (
	kindCall endpointKind = iota
	kindQuery
	kindReadState
	kindSubnetReadState
	numKinds
)

// apiVersions lists each endpoint's versions, newest first.
var apiVersions = [numKinds][]apiVersion{
	kindCall:            {{"v4", certificate.TreeRanges}, {"v3", certificate.FlatRanges}, {"v2", certificate.FlatRanges}},
	kindQuery:           {{"v3", certificate.TreeRanges}, {"v2", certificate.FlatRanges}},
	kindReadState:       {{"v3", certificate.TreeRanges}, {"v2", certificate.FlatRanges}},
	kindSubnetReadState: {{"v3", certificate.TreeRanges}, {"v2", certificate.FlatRanges}},
}

// hostVersions remembers, per endpoint, the newest version the host serves
// (an index into apiVersions). It only moves towards older versions.
type hostVersions [numKinds]atomic.Int32

// EndpointVersions reports the version of each endpoint the agent uses
// now, such as "call": "v4"; it changes only after a fallback.
func (a *Agent) EndpointVersions() map[string]string {
	names := [numKinds]string{kindCall: "call", kindQuery: "query", kindReadState: "read_state", kindSubnetReadState: "subnet read_state"}
	out := map[string]string{}
	for k := range numKinds {
		out[names[k]] = apiVersions[k][a.versions[k].Load()].name
	}
	return out
}

// post sends body to the newest version of the endpoint the host serves:
// POST /api/<version>/<target>/<verb>, where target is "canister/<id>" or
// "subnet/<id>". A 404 or 405 moves to the next older version, once for the
// lifetime of the agent; any other answer is returned with its version and
// path.
func (a *Agent) post(ctx context.Context, kind endpointKind, target, verb string, body []byte) (*response, apiVersion, string, error) {
	versions := apiVersions[kind]
	for {
		i := a.versions[kind].Load()
		v := versions[i]
		path := "/api/" + v.name + "/" + target + "/" + verb
		r, err := a.retrying(ctx, path, func() (*response, error) { return a.do(ctx, http.MethodPost, path, body) })
		if err != nil {
			return nil, v, path, err
		}
		last := int(i) == len(versions)-1
		if last || (r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed) {
			return r, v, path, nil
		}
		// Another request may have stepped down already; never step back up.
		a.versions[kind].CompareAndSwap(i, i+1)
	}
}
