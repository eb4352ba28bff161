package devnet

import (
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/nns"
)

// DashboardProposal is one proposal as the ICP dashboard API
// (https://ic-api.internetcomputer.org/api/v3/proposals) renders it.
type DashboardProposal struct {
	ID                       uint64          `json:"id"`
	ProposalID               uint64          `json:"proposal_id"`
	Title                    string          `json:"title"`
	Summary                  string          `json:"summary"`
	URL                      string          `json:"url"`
	Topic                    string          `json:"topic"`
	Status                   string          `json:"status"`
	Action                   string          `json:"action"`
	ActionNnsFunction        string          `json:"action_nns_function,omitempty"`
	Proposer                 string          `json:"proposer"`
	ProposalTimestampSeconds uint64          `json:"proposal_timestamp_seconds"`
	DecidedTimestampSeconds  uint64          `json:"decided_timestamp_seconds"`
	ExecutedTimestampSeconds uint64          `json:"executed_timestamp_seconds"`
	FailedTimestampSeconds   uint64          `json:"failed_timestamp_seconds"`
	DeadlineTimestampSeconds uint64          `json:"deadline_timestamp_seconds"`
	LatestTally              *dashboardTally `json:"latest_tally"`
	FailureReason            *dashboardError `json:"failure_reason"`
	Payload                  any             `json:"payload"`
}

type dashboardTally struct {
	Yes              uint64 `json:"yes"`
	No               uint64 `json:"no"`
	Total            uint64 `json:"total"`
	TimestampSeconds uint64 `json:"timestamp_seconds"`
}

type dashboardError struct {
	ErrorMessage string `json:"error_message"`
	ErrorType    int32  `json:"error_type"`
}

// DashboardNode is one node as the dashboard's /api/v3/nodes/<id> renders
// it, and as each entry of /api/v3/nodes does: every key a recorded reply
// carries (docs/decisions.md, alpage/devnet), subnet_id null for a node in
// no subnet, alertname "" for a node no alert is about.
type DashboardNode struct {
	Alertname        string  `json:"alertname"`
	DcID             string  `json:"dc_id"`
	DcName           string  `json:"dc_name"`
	GuestosVersion   string  `json:"guestos_version"`
	IPAddress        string  `json:"ip_address"`
	NodeID           string  `json:"node_id"`
	NodeOperatorID   string  `json:"node_operator_id"`
	NodeProviderID   string  `json:"node_provider_id"`
	NodeProviderName string  `json:"node_provider_name"`
	NodeType         string  `json:"node_type"`
	Owner            string  `json:"owner"`
	Region           string  `json:"region"`
	Status           string  `json:"status"`
	SubnetID         *string `json:"subnet_id"`
}

// Dashboard serves the ICP dashboard API the way alp reads it:
//
//	GET /api/v3/proposals/<id>
//	GET /api/v3/proposals?limit=&offset=&include_topic=&include_status=
//	GET /api/v3/nodes/<node>
//	GET /api/v3/nodes (every node, under "nodes")
//
// The list is newest first under "data"; include_topic and include_status
// repeat and take the dashboard's names (TOPIC_IC_OS_VERSION_ELECTION,
// EXECUTED). Unknown ids are 404.
type Dashboard struct {
	Proposals func() []DashboardProposal
	Node      func(id string) (DashboardNode, bool)
	Nodes     func() []DashboardNode // nil: the list is not served
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/api/v3/proposals":
		d.list(w, r)
	case strings.HasPrefix(path, "/api/v3/proposals/"):
		id, err := strconv.ParseUint(strings.TrimPrefix(path, "/api/v3/proposals/"), 10, 64)
		if err != nil {
			http.Error(w, "bad proposal id", http.StatusBadRequest)
			return
		}
		for _, p := range d.Proposals() {
			if p.ID == id {
				writeJSON(w, p)
				return
			}
		}
		http.NotFound(w, r)
	case path == "/api/v3/nodes" && d.Nodes != nil:
		writeJSON(w, map[string][]DashboardNode{"nodes": d.Nodes()})
	case strings.HasPrefix(path, "/api/v3/nodes/"):
		n, ok := d.Node(strings.TrimPrefix(path, "/api/v3/nodes/"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, n)
	default:
		http.NotFound(w, r)
	}
}

func (d *Dashboard) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, offset := 100, 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "bad limit", http.StatusBadRequest)
			return
		}
		limit = min(n, 100)
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "bad offset", http.StatusBadRequest)
			return
		}
		offset = n
	}
	topics, statuses := q["include_topic"], q["include_status"]
	all := d.Proposals()
	var maxID uint64
	var match []DashboardProposal
	for i := len(all) - 1; i >= 0; i-- {
		p := all[i]
		maxID = max(maxID, p.ID)
		if len(topics) > 0 && !slices.Contains(topics, p.Topic) {
			continue
		}
		if len(statuses) > 0 && !slices.Contains(statuses, p.Status) {
			continue
		}
		match = append(match, p)
	}
	page := []DashboardProposal{}
	if offset < len(match) {
		page = match[offset:min(len(match), offset+limit)]
	}
	writeJSON(w, map[string]any{"data": page, "max_proposal_index": maxID})
}

// DashboardProposals renders governance's proposals the dashboard way;
// payloads supplies the decoded payload of a proposal by id where known
// (the dashboard shows ExecuteNnsFunction payloads decoded).
func DashboardProposals(g *governance.Governance, payloads func(id uint64) any) []DashboardProposal {
	var out []DashboardProposal
	for _, p := range g.Proposals() {
		dp := DashboardProposal{
			ID:                       p.ID.ID,
			ProposalID:               p.ID.ID,
			Topic:                    nns.Topic(p.Topic).String(),
			Status:                   nns.ProposalStatus(p.Status).Word(),
			ProposalTimestampSeconds: p.ProposalTimestampSeconds,
			DecidedTimestampSeconds:  p.DecidedTimestampSeconds,
			ExecutedTimestampSeconds: p.ExecutedTimestampSeconds,
			FailedTimestampSeconds:   p.FailedTimestampSeconds,
		}
		if p.Proposer != nil {
			dp.Proposer = strconv.FormatUint(p.Proposer.ID, 10)
		}
		if p.DeadlineTimestampSeconds != nil {
			dp.DeadlineTimestampSeconds = *p.DeadlineTimestampSeconds
		}
		if t := p.LatestTally; t != nil {
			dp.LatestTally = &dashboardTally{Yes: t.Yes, No: t.No, Total: t.Total, TimestampSeconds: t.TimestampSeconds}
		}
		if f := p.FailureReason; f != nil {
			dp.FailureReason = &dashboardError{ErrorMessage: f.ErrorMessage, ErrorType: f.ErrorType}
		}
		if pr := p.Proposal; pr != nil {
			dp.Summary, dp.URL = pr.Summary, pr.URL
			if pr.Title != nil {
				dp.Title = *pr.Title
			}
			if a := pr.Action; a != nil {
				switch {
				case a.ExecuteNnsFunction != nil:
					dp.Action = "ExecuteNnsFunction"
					dp.ActionNnsFunction = strings.TrimPrefix(nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction).String(), "NNS_FUNCTION_")
					dp.Payload = PayloadJSON(nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction), a.ExecuteNnsFunction.Payload)
				case a.AddOrRemoveNodeProvider != nil:
					dp.Action = "AddOrRemoveNodeProvider"
					dp.Payload = candidJSON(reflect.ValueOf(*a.AddOrRemoveNodeProvider))
				case a.Motion != nil:
					dp.Action = "Motion"
					dp.Payload = map[string]string{"motion_text": a.Motion.MotionText}
				}
			}
		}
		if payloads != nil {
			if v := payloads(dp.ID); v != nil {
				dp.Payload = v
			}
		}
		out = append(out, dp)
	}
	return out
}
