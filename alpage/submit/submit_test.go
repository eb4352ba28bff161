package submit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/dryrun"
	"alpnib.dev/alpage/planfile"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// fakes records the order of the steps it was asked to run.
type fakes struct {
	calls     []string
	dryFail   string
	neuronErr error
	verdict   string
	confirm   error
	submitErr error
	saveErr   error
	registry  uint64
	st        *state.State
	saved     *state.State
}

func (f *fakes) DryRun(context.Context, *proposal.Proposal, uint64) (*dryrun.Result, error) {
	f.calls = append(f.calls, "dry run")
	if f.dryFail != "" {
		return &dryrun.Result{Status: nns.StatusFailed, FailureReason: f.dryFail}, nil
	}
	return &dryrun.Result{Status: nns.StatusExecuted}, nil
}

func (f *fakes) CheckNeuron(context.Context, uint64) (Access, error) {
	f.calls = append(f.calls, "neuron")
	if f.neuronErr != nil {
		return "", f.neuronErr
	}
	return Controller, nil
}

func (f *fakes) Preflight(context.Context, *proposal.Proposal) (*Preflight, error) {
	f.calls = append(f.calls, "preflight")
	return &Preflight{Verdict: f.verdict, Render: func(w io.Writer) { io.WriteString(w, "preflight: "+f.verdict+"\n") }}, nil
}

func (f *fakes) Confirm(context.Context, string) error {
	f.calls = append(f.calls, "confirm")
	return f.confirm
}

func (f *fakes) Submit(context.Context, *proposal.Proposal, uint64) (uint64, error) {
	f.calls = append(f.calls, "submit")
	return 77, f.submitErr
}

func (f *fakes) Load() (*state.State, error) {
	data, _ := f.st.Marshal()
	return state.Parse("fake", data)
}

func (f *fakes) Save(s *state.State) error {
	f.calls = append(f.calls, "save")
	if f.saveErr != nil {
		return f.saveErr
	}
	f.saved = s
	return nil
}

func (f *fakes) steps() Steps {
	return Steps{DryRun: f, Neuron: f, Preflight: f, Confirm: f, Submit: f, Store: f,
		RegistryVersion: func(context.Context) (uint64, error) { return f.registry, nil },
		Now:             func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }}
}

func newFakes() *fakes { return &fakes{verdict: VerdictReady, st: state.New(), registry: 9} }

var me = principal.SelfAuthenticating([]byte("me"))

func declared(t *testing.T, name string) *proposal.Proposal {
	t.Helper()
	cfg, err := config.Load("../config/testdata/fleet/proposals.hcl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := proposal.Build(cfg.Proposal(name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func apply(t *testing.T, f *fakes, req Request) (*Result, string, error) {
	t.Helper()
	if req.Proposal == nil {
		req.Proposal = declared(t, "add-n2")
	}
	req.Principal, req.Host, req.Neuron = me, "http://127.0.0.1:4943", 42
	var out bytes.Buffer
	res, err := Apply(context.Background(), f.steps(), req, &out, &out)
	return res, out.String(), err
}

func TestWithYesAndTheConfirmationEveryStepRunsInOrderAndTheSubmissionIsRecorded(t *testing.T) {
	f := newFakes()
	res, out, err := apply(t, f, Request{Yes: true})
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	want := []string{"dry run", "neuron", "preflight", "confirm", "submit", "save"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("steps %v, want %v", f.calls, want)
	}
	rec := f.saved.Proposals["add-n2"]
	if res.Outcome != Submitted || rec == nil || rec.ProposalID != 77 || rec.Neuron != 42 || rec.SubmittedBy != me.String() ||
		rec.Host != "http://127.0.0.1:4943" || rec.Kind != "membership" || rec.PayloadSHA256 != declared(t, "add-n2").PayloadSHA256 ||
		rec.SubmittedAt != "2026-11-29T12:00:00Z" {
		t.Fatalf("result %+v, recorded %+v", res, rec)
	}
	for _, s := range []string{`proposal "add-n2" (membership)`, "proposer: neuron 42", "identity: " + me.String(), "host:     http://127.0.0.1:4943"} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}
}

func TestWithoutYesItStopsAfterTheSummaryAndSendsNothing(t *testing.T) {
	f := newFakes()
	res, out, err := apply(t, f, Request{})
	if err != nil || res.Outcome != DryRunOnly || !strings.Contains(res.Message, "dry run only; run again with --yes") {
		t.Fatalf("res %+v err %v", res, err)
	}
	if slices.Contains(f.calls, "submit") || slices.Contains(f.calls, "confirm") || !strings.Contains(out, "payload:") {
		t.Fatalf("steps %v\n%s", f.calls, out)
	}
}

func TestARefusedConfirmationSubmitsNothing(t *testing.T) {
	f := newFakes()
	f.confirm = errors.New("aborted: you typed \"yes\", not submit")
	_, _, err := apply(t, f, Request{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "nothing was submitted") || slices.Contains(f.calls, "submit") {
		t.Fatalf("err %v, steps %v", err, f.calls)
	}
}

func TestAFailedDryRunStopsBeforeTheNeuronIsEvenAskedUnlessForced(t *testing.T) {
	f := newFakes()
	f.dryFail = "sev_enabled of subnet x cannot be changed"
	_, _, err := apply(t, f, Request{Yes: true})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !strings.Contains(err.Error(), "sev_enabled") || !slices.Equal(f.calls, []string{"dry run"}) {
		t.Fatalf("err %v, steps %v", err, f.calls)
	}
	f = newFakes()
	f.dryFail = "sev_enabled of subnet x cannot be changed"
	if res, _, err := apply(t, f, Request{Yes: true, Force: true}); err != nil || res.Outcome != Submitted {
		t.Fatalf("--force: %v", err)
	}
}

func TestANoOpIsRefusedWithoutForce(t *testing.T) {
	f := newFakes()
	f.verdict = VerdictNoOp
	_, _, err := apply(t, f, Request{Yes: true})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !strings.Contains(err.Error(), "no-op") || slices.Contains(f.calls, "submit") {
		t.Fatalf("err %v, steps %v", err, f.calls)
	}
	f = newFakes()
	f.verdict = VerdictNoOp
	if res, _, err := apply(t, f, Request{Yes: true, Force: true}); err != nil || res.Outcome != Submitted {
		t.Fatalf("--force: %v", err)
	}
}

func TestAFlaggedOrRefusedPreflightStopsWithoutForce(t *testing.T) {
	for _, v := range []string{"flagged", "refused"} {
		f := newFakes()
		f.verdict = v
		_, _, err := apply(t, f, Request{Yes: true})
		if err == nil || !strings.Contains(err.Error(), "preflight says "+v) || slices.Contains(f.calls, "submit") {
			t.Fatalf("%s: err %v, steps %v", v, err, f.calls)
		}
	}
}

func TestAnIdentityThatMayNotUseTheNeuronIsToldSo(t *testing.T) {
	f := newFakes()
	f.neuronErr = &nns.GovernanceError{ErrorType: nns.ErrorTypeNotAuthorized, ErrorMessage: "caller is not authorized"}
	_, _, err := apply(t, f, Request{Yes: true})
	if err == nil || !strings.Contains(err.Error(), me.String()+" may not propose with neuron 42") || slices.Contains(f.calls, "preflight") {
		t.Fatalf("err %v, steps %v", err, f.calls)
	}
}

func recorded(t *testing.T, f *fakes, hash string, status state.Status) {
	t.Helper()
	f.st.Proposals["add-n2"] = &state.Proposal{Kind: "membership", ProposalID: 5, PayloadSHA256: hash, Status: status}
}

func TestTheStateDecisionRulesRunFirst(t *testing.T) {
	p := declared(t, "add-n2")
	other := strings.Repeat("0", 64)

	f := newFakes()
	recorded(t, f, p.PayloadSHA256, state.StatusExecuted)
	var stopped *StoppedError
	if _, _, err := apply(t, f, Request{Yes: true, Force: true}); !errors.As(err, &stopped) || !strings.Contains(err.Error(), "rename the proposal block") || len(f.calls) != 0 {
		t.Errorf("terminal record with --force: err %v, steps %v", err, f.calls)
	}

	f = newFakes()
	recorded(t, f, p.PayloadSHA256, state.StatusOpen)
	if res, _, err := apply(t, f, Request{Yes: true}); err != nil || res.Outcome != NothingToDo || res.ProposalID != 5 || len(f.calls) != 0 {
		t.Errorf("same hash: res %+v err %v steps %v", res, err, f.calls)
	}

	f = newFakes()
	recorded(t, f, other, state.StatusOpen)
	if _, _, err := apply(t, f, Request{Yes: true}); !errors.As(err, &stopped) || !strings.Contains(err.Error(), "--force") || len(f.calls) != 0 {
		t.Errorf("changed hash: err %v steps %v", err, f.calls)
	}
	f = newFakes()
	recorded(t, f, other, state.StatusOpen)
	if res, _, err := apply(t, f, Request{Yes: true, Force: true}); err != nil || res.Outcome != Submitted || f.saved.Proposals["add-n2"].ProposalID != 77 {
		t.Errorf("changed hash with --force: err %v", err)
	}
}

func TestARecordOfAnotherKindWithTheSameHashStopsApplyInsteadOfBeingNothingToDo(t *testing.T) {
	p := declared(t, "add-n2")
	f := newFakes()
	recorded(t, f, p.PayloadSHA256, state.StatusOpen)
	f.st.Proposals["add-n2"].Kind = "remove_nodes"
	var stopped *StoppedError
	_, _, err := apply(t, f, Request{Yes: true})
	if !errors.As(err, &stopped) || len(f.calls) != 0 {
		t.Fatalf("err %v, steps %v; want a stop before any step", err, f.calls)
	}
	for _, want := range []string{`proposal "add-n2" as proposal 5 of kind remove_nodes`, "declares kind membership", "restore it from git"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

func TestASubmissionThatCannotBeRecordedComesBackWithItsIdAndEntry(t *testing.T) {
	f := newFakes()
	f.saveErr = errors.New("read-only file system")
	_, _, err := apply(t, f, Request{Yes: true})
	var lost *LostRecordError
	if !errors.As(err, &lost) || lost.ProposalID != 77 || lost.Entry.ProposalID != 77 || lost.Name != "add-n2" {
		t.Fatalf("err = %v", err)
	}
	loud := lost.Loud("alp import add-n2 77")
	for _, s := range []string{"PROPOSAL 77 WAS SUBMITTED", "read-only file system", "alp import add-n2 77", `"proposal_id": 77`} {
		if !strings.Contains(loud, s) {
			t.Errorf("loud message lacks %q:\n%s", s, loud)
		}
	}
}

func TestAStalePlanIsRefusedBeforeTheDryRun(t *testing.T) {
	p := declared(t, "add-n2")
	f := newFakes()
	_, _, err := apply(t, f, Request{Yes: true, Plan: &planfile.Entry{Name: "add-n2", PayloadSHA256: p.PayloadSHA256, RegistryVersion: 8}})
	if !errors.Is(err, planfile.ErrRegistryMoved) || len(f.calls) != 0 {
		t.Fatalf("err %v steps %v", err, f.calls)
	}
	f = newFakes()
	if res, _, err := apply(t, f, Request{Yes: true, Plan: &planfile.Entry{Name: "add-n2", PayloadSHA256: p.PayloadSHA256, RegistryVersion: 9}}); err != nil || res.Outcome != Submitted {
		t.Fatalf("current plan: %v", err)
	}
}
