package readback

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

type fakeGov map[uint64]*nns.ProposalInfo

func (g fakeGov) GetProposalInfo(_ context.Context, id uint64) (*nns.ProposalInfo, error) {
	if id == 666 {
		return nil, errors.New("connection refused")
	}
	return g[id], nil
}

type fakeDash map[uint64]*source.Proposal

func (d fakeDash) Proposal(_ context.Context, id uint64) (*source.Proposal, bool, error) {
	p, ok := d[id]
	return p, ok, nil
}

func TestGovernanceIsAskedFirstThenTheDashboardThenNobody(t *testing.T) {
	at := uint64(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC).Unix())
	gov := fakeGov{1: {Status: int32(nns.StatusFailed), FailedTimestampSeconds: at, DecidedTimestampSeconds: at - 5,
		FailureReason: &nns.GovernanceError{ErrorMessage: "boom"}, Proposer: &nns.NeuronID{ID: 7}, ProposalTimestampSeconds: at - 100,
		LatestTally: &nns.Tally{Yes: 3, No: 1, Total: 4}}}
	dash := fakeDash{2: {ID: 2, Status: "REJECTED", DecidedTimestampSeconds: source.Number(at), Proposer: 9}}
	obs, errs := ReadAll(context.Background(), gov, dash, []uint64{1, 2, 3, 666}, 2)

	if o := obs[0]; errs[0] != nil || o.Source != FromGovernance || o.Status != state.StatusFailed || o.FailureReason != "boom" ||
		o.Proposer != 7 || o.SubmittedAt.Unix() != int64(at-100) || o.ResolvedAt.Unix() != int64(at) || *o.Tally != (Tally{3, 1, 4}) {
		t.Errorf("governance: %+v %v", o, errs[0])
	}
	if o := obs[1]; errs[1] != nil || o.Source != FromDashboard || o.Status != state.StatusRejected || o.ResolvedAt.Unix() != int64(at) || o.Proposer != 9 {
		t.Errorf("dashboard: %+v %v", o, errs[1])
	}
	if o := obs[2]; errs[2] != nil || o.Source != FromNowhere || o.Word() != Unknown {
		t.Errorf("nowhere: %+v %v", o, errs[2])
	}
	if errs[3] == nil {
		t.Error("a governance that cannot be asked is not an absence")
	}
}

func TestEveryGovernanceStatusMapsToTheRecordedOne(t *testing.T) {
	for s, want := range map[nns.ProposalStatus]state.Status{
		nns.StatusOpen: state.StatusOpen, nns.StatusAdopted: state.StatusAdopted, nns.StatusExecuted: state.StatusExecuted,
		nns.StatusRejected: state.StatusRejected, nns.StatusFailed: state.StatusFailed, nns.StatusUnspecified: "",
	} {
		if got := StatusOf(s); got != want {
			t.Errorf("StatusOf(%s) = %q, want %q", s, got, want)
		}
		if s != nns.StatusUnspecified {
			if got := statusOfWord(s.Word()); got != want {
				t.Errorf("dashboard word %s = %q, want %q", s.Word(), got, want)
			}
		}
	}
}

func TestThePayloadHashIsTheOneStateJSONPins(t *testing.T) {
	payload := []byte("DIDL\x00\x00")
	sum := sha256.Sum256(payload)
	got, fn, ok := PayloadSHA256(&nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: 18, Payload: payload}})
	if !ok || fn != nns.FunctionRemoveNodes || got != hex.EncodeToString(sum[:]) {
		t.Errorf("ExecuteNnsFunction: %s %s %t", got, fn, ok)
	}
	id := principal.SelfAuthenticating([]byte("p"))
	action := nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &id}}}
	b, _ := candid.Marshal(action)
	sum = sha256.Sum256(b)
	if got, fn, ok := PayloadSHA256(&nns.Action{AddOrRemoveNodeProvider: &action}); !ok || fn != nns.FunctionUnspecified || got != hex.EncodeToString(sum[:]) {
		t.Errorf("AddOrRemoveNodeProvider: %s %t", got, ok)
	}
	if _, _, ok := PayloadSHA256(&nns.Action{Motion: &nns.Motion{MotionText: "x"}}); ok {
		t.Error("a motion has no payload alp knows")
	}
}

func TestTheTallyIsShownAsSharesOfTheTotal(t *testing.T) {
	if s := (Tally{Yes: 2, No: 1, Total: 8}).String(); s != "yes 25.00% no 12.50%" {
		t.Errorf("tally = %q", s)
	}
	if s := (Tally{}).String(); s != "-" {
		t.Errorf("empty tally = %q", s)
	}
}

func TestAProposalReadFromTheDashboardInEveryNumberFormBecomesAnObservation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v3/proposals/12" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"proposal_id": 12, "status": "FAILED", "proposer": "4242", "proposal_timestamp_seconds": 1700000000,
			"failed_timestamp_seconds": "1700000100", "decided_timestamp_seconds": null,
			"latest_tally": {"yes": 4.5e16, "no": 0, "total": 5e16, "timestamp_seconds": 1700000100},
			"failure_reason": {"error_message": "registry said no", "error_type": 13}}`)
	}))
	defer srv.Close()
	c := source.NewDashboard(srv.URL+"/", nil)
	p, found, err := c.Proposal(context.Background(), 12)
	if err != nil || !found {
		t.Fatalf("found %t, err %v", found, err)
	}
	o := fromDashboard(12, p)
	if o.Status != state.StatusFailed || o.Proposer != 4242 || o.SubmittedAt.Unix() != 1700000000 || o.ResolvedAt.Unix() != 1700000100 ||
		o.FailureReason != "registry said no" || *o.Tally != (Tally{Yes: 45e15, No: 0, Total: 5e16}) {
		t.Fatalf("observation %+v tally %+v", o, o.Tally)
	}
	if _, found, err := c.Proposal(context.Background(), 13); found || err != nil {
		t.Fatalf("404: found %t err %v", found, err)
	}
}
