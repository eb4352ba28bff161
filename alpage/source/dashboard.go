package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Dashboard reads the ICP dashboard's public API.
type Dashboard struct{ c client }

// NewDashboard returns a client of the dashboard at base; hc nil means
// http.DefaultClient.
func NewDashboard(base string, hc *http.Client) *Dashboard {
	return &Dashboard{c: newClient(base, hc)}
}

// Proposal is the part of a dashboard proposal (GET /api/v3/proposals/<id>)
// alp reads: plan the election facts (summary, payload), status and import
// the outcome of a proposal governance purged (status, proposer,
// timestamps, tally, failure reason).
type Proposal struct {
	ID                       Number         `json:"proposal_id"`
	Title                    string         `json:"title"`
	Summary                  string         `json:"summary"`
	Topic                    string         `json:"topic"`
	Status                   string         `json:"status"`
	Action                   string         `json:"action"`
	ActionNnsFunction        string         `json:"action_nns_function"`
	Proposer                 Number         `json:"proposer"`
	ProposalTimestampSeconds Number         `json:"proposal_timestamp_seconds"`
	DecidedTimestampSeconds  Number         `json:"decided_timestamp_seconds"`
	ExecutedTimestampSeconds Number         `json:"executed_timestamp_seconds"`
	FailedTimestampSeconds   Number         `json:"failed_timestamp_seconds"`
	LatestTally              *Tally         `json:"latest_tally"`
	FailureReason            *FailureReason `json:"failure_reason"`
	Payload                  map[string]any `json:"payload"`
}

// Tally is a proposal's latest vote tally, in voting power.
type Tally struct {
	Yes   Number `json:"yes"`
	No    Number `json:"no"`
	Total Number `json:"total"`
}

// FailureReason is why an adopted proposal failed to execute.
type FailureReason struct {
	ErrorMessage string `json:"error_message"`
}

// Number is a non-negative integer the dashboard writes as a JSON number
// (large ones in exponent form, 4.5e16) or as a decimal string (neuron
// ids, which overflow a float); null and "" are 0.
type Number uint64

// UnmarshalJSON accepts every form the dashboard writes.
func (n *Number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	s := strings.Trim(string(b), `"`)
	if string(b) == "null" || s == "" {
		*n = 0
		return nil
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		*n = Number(v)
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v >= math.MaxUint64 || math.IsNaN(v) {
		return fmt.Errorf("not a non-negative number: %s", b)
	}
	*n = Number(v)
	return nil
}

// Proposal reads one proposal; found is false on a 404.
func (d *Dashboard) Proposal(ctx context.Context, id uint64) (*Proposal, bool, error) {
	var p Proposal
	if err := d.c.getJSON(ctx, "/api/v3/proposals/"+strconv.FormatUint(id, 10), &p); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("ICP dashboard: %w", err)
	}
	return &p, true, nil
}

// Election is a GuestOS version elected by an executed proposal, with the
// release name the proposal's summary gives it.
type Election struct {
	VersionID  string `json:"version_id"`
	Release    string `json:"release,omitempty"`
	ProposalID uint64 `json:"proposal_id"`
}

// electionPages bounds how far back Elections pages (100 proposals each).
const electionPages = 20

// Elections lists the versions elected by executed
// TOPIC_IC_OS_VERSION_ELECTION proposals, newest election per version,
// sorted by proposal id (oldest first). It does not subtract later
// unelections: the registry's blessed set is authoritative for that.
func (d *Dashboard) Elections(ctx context.Context) ([]Election, error) {
	byVersion := map[string]Election{}
	for page := 0; page < electionPages; page++ {
		q := url.Values{}
		q.Set("limit", "100")
		q.Set("offset", strconv.Itoa(page*100))
		q.Set("include_topic", "TOPIC_IC_OS_VERSION_ELECTION")
		q.Set("include_status", "EXECUTED")
		var resp struct {
			Data []Proposal `json:"data"`
		}
		if err := d.c.getJSON(ctx, "/api/v3/proposals?"+q.Encode(), &resp); err != nil {
			return nil, fmt.Errorf("ICP dashboard: %w", err)
		}
		for _, p := range resp.Data {
			e, ok := ElectionOf(p)
			if !ok {
				continue
			}
			if old, seen := byVersion[e.VersionID]; !seen || e.ProposalID > old.ProposalID {
				byVersion[e.VersionID] = e
			}
		}
		if len(resp.Data) < 100 {
			break
		}
	}
	out := make([]Election, 0, len(byVersion))
	for _, e := range byVersion {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProposalID < out[j].ProposalID })
	return out, nil
}

var releaseNotes = regexp.MustCompile(`Release Notes for \[([^\]]+)\]`)

// ElectionOf reads the version an election proposal elects
// (payload.replica_version_to_elect) and the release name from its
// summary ("Release Notes for [<name>]", markdown escapes removed).
func ElectionOf(p Proposal) (Election, bool) {
	v, _ := p.Payload["replica_version_to_elect"].(string)
	if v == "" {
		return Election{}, false
	}
	e := Election{VersionID: v, ProposalID: uint64(p.ID)}
	if m := releaseNotes.FindStringSubmatch(p.Summary); m != nil {
		e.Release = strings.ReplaceAll(m[1], `\`, "")
	}
	return e, true
}
