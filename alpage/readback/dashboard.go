package readback

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DashboardClient reads one proposal from the ICP dashboard
// (GET /api/v3/proposals/<id>). alpage/source's dashboard client decodes
// what plan needs; status and import need more of the same document — the
// tally, the proposer, the timestamps and the failure reason — so this one
// decodes those.
type DashboardClient struct {
	// Base is the dashboard URL, e.g. https://ic-api.internetcomputer.org.
	Base string
	// HTTP is http.DefaultClient when nil.
	HTTP *http.Client
	// Timeout bounds one request; 15s when zero.
	Timeout time.Duration
}

// DashboardProposal is the part of a dashboard proposal status and import
// read.
type DashboardProposal struct {
	ProposalID               flexUint                           `json:"proposal_id"`
	Status                   string                             `json:"status"`
	Proposer                 flexUint                           `json:"proposer"`
	ProposalTimestampSeconds flexUint                           `json:"proposal_timestamp_seconds"`
	DecidedTimestampSeconds  flexUint                           `json:"decided_timestamp_seconds"`
	ExecutedTimestampSeconds flexUint                           `json:"executed_timestamp_seconds"`
	FailedTimestampSeconds   flexUint                           `json:"failed_timestamp_seconds"`
	LatestTally              *struct{ Yes, No, Total flexUint } `json:"latest_tally"`
	FailureReason            *struct {
		ErrorMessage string `json:"error_message"`
	} `json:"failure_reason"`
}

// maxDashboardBody caps a proposal document (summaries can be long).
const maxDashboardBody = 4 << 20

// Proposal reads proposal id; found is false on a 404.
func (c DashboardClient) Proposal(ctx context.Context, id uint64) (*DashboardProposal, bool, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := strings.TrimRight(c.Base, "/") + "/api/v3/proposals/" + strconv.FormatUint(id, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("ICP dashboard: GET %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("ICP dashboard: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDashboardBody))
	if err != nil {
		return nil, false, fmt.Errorf("ICP dashboard: GET %s: %w", url, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, nil
	case resp.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("ICP dashboard: GET %s: %s", url, resp.Status)
	}
	var p DashboardProposal
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false, fmt.Errorf("ICP dashboard: GET %s: decode: %w", url, err)
	}
	return &p, true, nil
}

// flexUint is a non-negative integer the dashboard writes as a JSON
// number (sometimes in exponent form) or a decimal string; null is 0.
type flexUint uint64

func (f *flexUint) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = 0
		return nil
	}
	s := strings.Trim(string(b), `"`)
	if s == "" {
		*f = 0
		return nil
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		*f = flexUint(v)
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > math.MaxUint64 || math.IsNaN(v) {
		return fmt.Errorf("not a non-negative number: %s", b)
	}
	*f = flexUint(v)
	return nil
}
