// Package submit is `alp apply`: the pipeline that takes one declared
// proposal to the NNS and records it, in the order the spec fixes —
// the state decision rules, the dry run on a seeded local NNS, the neuron
// access check, preflight, the summary, the confirmation, submit, record.
// Every step that touches the world is a small interface, so the pipeline
// itself is tested with fakes and the command only wires real clients in.
//
// The one thing the pipeline must never do is lose a submission: a
// proposal that was made but could not be written to state.json comes back
// as a *LostRecordError carrying the id and the exact entry to add, which
// the command prints loudly and turns into its own exit code.
package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"alpnib.dev/alpage/dryrun"
	"alpnib.dev/alpage/planfile"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/principal"
)

// DryRunner executes the proposal on a seeded local NNS.
type DryRunner interface {
	DryRun(ctx context.Context, p *proposal.Proposal, neuron uint64) (*dryrun.Result, error)
}

// NeuronChecker reads neuron as the identity (a signed get_full_neuron)
// and says whether the identity is its controller or a hotkey
// (ClassifyAccess); an error when it is neither or the read failed.
type NeuronChecker interface {
	CheckNeuron(ctx context.Context, neuron uint64) (Access, error)
}

// Preflighter checks the proposal against live state.
type Preflighter interface {
	Preflight(ctx context.Context, p *proposal.Proposal) (*Preflight, error)
}

// Preflight is what apply needs from a preflight report.
type Preflight struct {
	// Verdict is "ready", "no-op", "flagged" or "refused".
	Verdict string
	// Render writes the report for a person.
	Render func(w io.Writer)
}

// The preflight verdicts apply acts on.
const (
	VerdictReady = "ready"
	VerdictNoOp  = "no-op"
)

// Confirmer asks the person to confirm; an error aborts.
type Confirmer interface {
	Confirm(ctx context.Context, prompt string) error
}

// Submitter makes the proposal from neuron and returns its id.
type Submitter interface {
	Submit(ctx context.Context, p *proposal.Proposal, neuron uint64) (uint64, error)
}

// Store reads and writes state.json.
type Store interface {
	Load() (*state.State, error)
	Save(*state.State) error
}

// Steps are the pipeline's adapters.
type Steps struct {
	DryRun    DryRunner
	Neuron    NeuronChecker
	Preflight Preflighter
	Confirm   Confirmer
	Submit    Submitter
	Store     Store
	// RegistryVersion reads the live registry version, for a plan file.
	RegistryVersion func(ctx context.Context) (uint64, error)
	// Now stamps submitted_at; time.Now when nil.
	Now func() time.Time
	// Find, when set, makes submits safe to retry: before anything else
	// apply looks governance up for the proposal (a previous apply may
	// have made it and lost the answer), and after a submit whose outcome
	// is unknown it looks again instead of failing blind. Found, the
	// proposal is recorded and never submitted a second time.
	Find Finder
	// Lookups are the waits before each look-up after an unknown outcome
	// (governance may still be making the proposal); DefaultLookups when
	// nil.
	Lookups []time.Duration
	// Wait waits d or until ctx ends; a context-aware timer when nil.
	Wait func(ctx context.Context, d time.Duration) error
}

// DefaultLookups are the waits before each look-up after a submit whose
// outcome is unknown.
var DefaultLookups = []time.Duration{0, 2 * time.Second, 5 * time.Second, 10 * time.Second}

// Request is one apply.
type Request struct {
	Proposal  *proposal.Proposal
	Principal principal.Principal
	Host      string
	Neuron    uint64
	// Yes goes on past the summary to the typed confirmation.
	Yes bool
	// Force submits a changed payload, a no-op, a proposal preflight
	// refused or flagged, or one whose dry run failed.
	Force bool
	// Plan, when applying a plan file, is the planned entry: apply refuses
	// when the payload or the registry moved since.
	Plan *planfile.Entry
}

// Outcome is how an apply ended without error.
type Outcome int

// The outcomes.
const (
	// NothingToDo: state.json records this payload as submitted already.
	NothingToDo Outcome = iota
	// DryRunOnly: every check passed; without --yes nothing was sent.
	DryRunOnly
	// Submitted: the proposal was made and recorded.
	Submitted
	// Recorded: governance already had the proposal (an earlier apply
	// made it and lost the answer); it was recorded, nothing was sent.
	Recorded
)

// String is the outcome as `alp apply --output json` reports it.
func (o Outcome) String() string {
	switch o {
	case NothingToDo:
		return "nothing-to-do"
	case DryRunOnly:
		return "dry-run-only"
	case Submitted:
		return "submitted"
	case Recorded:
		return "recorded"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Result is an apply that ended without error.
type Result struct {
	Outcome    Outcome
	ProposalID uint64
	// Message says what happened, for the person.
	Message string
	// Access is how the identity may use the neuron (empty when apply
	// ended before the check: nothing to do).
	Access Access
}

// StoppedError is a check that stopped the apply before anything was sent
// (the state.json rules refused, the dry run failed, preflight did not say
// ready, the plan is stale).
type StoppedError struct {
	Reason string
	Err    error // the cause, when there is one
}

func (e *StoppedError) Error() string { return e.Reason + "; nothing was submitted" }
func (e *StoppedError) Unwrap() error { return e.Err }

// LostRecordError is a proposal that was submitted but could not be
// recorded in state.json.
type LostRecordError struct {
	Name       string
	ProposalID uint64
	Entry      *state.Proposal
	Err        error
}

func (e *LostRecordError) Error() string {
	return fmt.Sprintf("proposal %q WAS SUBMITTED as proposal %d but could not be recorded in state.json: %v", e.Name, e.ProposalID, e.Err)
}

func (e *LostRecordError) Unwrap() error { return e.Err }

// Loud is what the command prints on stderr for a lost record: the id, the
// import command that records it, and the entry to paste by hand.
func (e *LostRecordError) Loud(importCmd string) string {
	entry, _ := json.MarshalIndent(map[string]*state.Proposal{e.Name: e.Entry}, "    ", "  ")
	bar := strings.Repeat("!", 72)
	var b strings.Builder
	fmt.Fprintln(&b, bar)
	fmt.Fprintf(&b, "!!! PROPOSAL %d WAS SUBMITTED, BUT state.json WAS NOT UPDATED\n", e.ProposalID)
	fmt.Fprintf(&b, "!!! cause: %v\n", e.Err)
	fmt.Fprintln(&b, "!!! Record it now, or a later apply will not know it was submitted:")
	fmt.Fprintf(&b, "!!!   %s\n", importCmd)
	fmt.Fprintln(&b, "!!! or add this entry under \"proposals\" in state.json:")
	fmt.Fprintf(&b, "    %s\n", entry)
	fmt.Fprintln(&b, bar)
	return b.String()
}

// Apply runs the pipeline for req, writing progress (checks, dry run,
// preflight) to progress and the summary to out.
func Apply(ctx context.Context, s Steps, req Request, out, progress io.Writer) (*Result, error) {
	p := req.Proposal
	st, err := s.Store.Load()
	if err != nil {
		return nil, err
	}
	rec := st.Proposals[p.Name]
	switch d, why := state.Decide(p.Name, rec, string(p.Kind), p.RecordedHash(rec), req.Force); d {
	case state.Refuse:
		return nil, &StoppedError{Reason: why}
	case state.NothingToDo:
		return &Result{Outcome: NothingToDo, ProposalID: st.Proposals[p.Name].ProposalID, Message: why}, nil
	}

	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	since := now().Add(-LookupWindow)
	if s.Find != nil {
		found, err := s.Find.FindSubmitted(ctx, p, req.Neuron, since, recordedIDs(st))
		if err != nil {
			return nil, fmt.Errorf("%w; nothing was submitted", err)
		}
		if found != nil {
			return recordFound(s, req, found, now(), progress)
		}
	}

	if req.Plan != nil {
		if err := checkPlan(ctx, s, req); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "plan: payload and registry version %d unchanged since the plan\n", req.Plan.RegistryVersion)
	}

	res, err := s.DryRun.DryRun(ctx, p, req.Neuron)
	if err != nil {
		return nil, err
	}
	res.Render(progress)
	if res.Failed() {
		if !req.Force {
			return nil, &StoppedError{Reason: res.Err().Error() + " (--force submits anyway)"}
		}
		fmt.Fprintln(progress, "warning: --force: going on although the dry run failed")
	}

	access, err := s.Neuron.CheckNeuron(ctx, req.Neuron)
	if err != nil {
		return nil, fmt.Errorf("neuron access: %s may not propose with neuron %d: %w", req.Principal, req.Neuron, err)
	}
	fmt.Fprintf(progress, "neuron access: %s is the %s of neuron %d\n", req.Principal, access, req.Neuron)

	pf, err := s.Preflight.Preflight(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	if pf.Render != nil {
		pf.Render(progress)
	}
	if pf.Verdict != VerdictReady {
		why := fmt.Sprintf("preflight says %s", pf.Verdict)
		if pf.Verdict == VerdictNoOp {
			why = "the proposal is a no-op: it would change nothing"
		}
		if !req.Force {
			return nil, &StoppedError{Reason: why + " (--force submits anyway)"}
		}
		fmt.Fprintf(progress, "warning: --force: going on although %s\n", why)
	}

	writeSummary(out, req)
	if !req.Yes {
		return &Result{Outcome: DryRunOnly, Message: "dry run only; run again with --yes to submit", Access: access}, nil
	}
	prompt := fmt.Sprintf("Type submit to make proposal %q from neuron %d on %s: ", p.Name, req.Neuron, req.Host)
	if err := s.Confirm.Confirm(ctx, prompt); err != nil {
		return nil, fmt.Errorf("%w; nothing was submitted", err)
	}

	id, err := s.Submit.Submit(ctx, p, req.Neuron)
	entry := newEntry(req, id, now())
	found := false
	if err != nil {
		if s.Find == nil || !OutcomeUnknown(err) {
			return nil, fmt.Errorf("submit %q: %w", p.Name, err)
		}
		fmt.Fprintf(progress, "submit: the outcome is unknown (%v); looking governance up for the proposal before anything else\n", err)
		f, err := s.lookAgain(ctx, req, since, err)
		if err != nil {
			return nil, err
		}
		id, found, entry = f.ID, true, foundEntry(req, f, now())
	}
	if err := record(s.Store, p.Name, entry); err != nil {
		return nil, &LostRecordError{Name: p.Name, ProposalID: id, Entry: entry, Err: err}
	}
	msg := fmt.Sprintf("submitted proposal %q as proposal %d; recorded in state.json", p.Name, id)
	if found {
		msg = fmt.Sprintf("submitted proposal %q as proposal %d (the answer was lost; governance has it, by neuron %d with the same payload); recorded in state.json", p.Name, id, req.Neuron)
	}
	return &Result{Outcome: Submitted, ProposalID: id, Message: msg, Access: access}, nil
}

func newEntry(req Request, id uint64, at time.Time) *state.Proposal {
	p := req.Proposal
	return &state.Proposal{
		Kind: string(p.Kind), ProposalID: id, PayloadSHA256: p.PayloadSHA256, SubmittedBy: req.Principal.String(),
		Neuron: req.Neuron, Host: req.Host, SubmittedAt: state.TimeOf(at), DeclaredSHA256: p.DeclaredToRecord(),
	}
}

// foundEntry is the record of a proposal governance has: when it was made
// and its status as governance says them.
func foundEntry(req Request, f *Found, now time.Time) *state.Proposal {
	at := f.SubmittedAt
	if at.IsZero() {
		at = now
	}
	e := newEntry(req, f.ID, at)
	e.Status = f.Status
	return e
}

// lookAgain looks governance up after a submit whose outcome is unknown,
// at each of s.Lookups, until it finds the proposal. Not found, it is an
// *UnknownOutcomeError: it never submits again by itself.
func (s Steps) lookAgain(ctx context.Context, req Request, since time.Time, cause error) (*Found, error) {
	p := req.Proposal
	wait := s.Wait
	if wait == nil {
		wait = sleep
	}
	lookups := s.Lookups
	if lookups == nil {
		lookups = DefaultLookups
	}
	for _, d := range lookups {
		if err := wait(ctx, d); err != nil {
			break
		}
		st, err := s.Store.Load()
		if err != nil {
			return nil, fmt.Errorf("submit %q: the outcome is unknown (%v), and %w", p.Name, cause, err)
		}
		found, err := s.Find.FindSubmitted(ctx, p, req.Neuron, since, recordedIDs(st))
		if err != nil {
			return nil, fmt.Errorf("submit %q: the outcome is unknown (%v), and %w; run alp apply again: it looks governance up first", p.Name, cause, err)
		}
		if found != nil {
			return found, nil
		}
	}
	return nil, &UnknownOutcomeError{Name: p.Name, Neuron: req.Neuron, SHA256: p.PayloadSHA256, Since: since, Err: cause}
}

// recordFound records proposal id, which governance already had, as req's
// proposal (with --yes), submitting nothing.
func recordFound(s Steps, req Request, found *Found, now time.Time, progress io.Writer) (*Result, error) {
	p, id := req.Proposal, found.ID
	fmt.Fprintf(progress, "governance: proposal %d, made by neuron %d within %s, carries this payload (sha256 %s); it is not submitted again\n",
		id, req.Neuron, LookupWindow, p.PayloadSHA256)
	if !req.Yes {
		return &Result{Outcome: DryRunOnly, ProposalID: id, Message: fmt.Sprintf("governance already has proposal %q as proposal %d; run again with --yes to record it (nothing will be submitted)", p.Name, id)}, nil
	}
	entry := foundEntry(req, found, now)
	if err := record(s.Store, p.Name, entry); err != nil {
		return nil, &LostRecordError{Name: p.Name, ProposalID: id, Entry: entry, Err: err}
	}
	return &Result{Outcome: Recorded, ProposalID: id, Message: fmt.Sprintf("proposal %q was already submitted as proposal %d; recorded in state.json, nothing was submitted again", p.Name, id)}, nil
}

// recordedIDs are the proposal ids state.json records under any name.
func recordedIDs(st *state.State) map[uint64]bool {
	ids := map[uint64]bool{}
	for _, e := range st.Proposals {
		if e != nil {
			ids[e.ProposalID] = true
		}
	}
	return ids
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// record re-reads state.json (another apply may have recorded something
// while this one waited for the confirmation) and adds the entry.
func record(store Store, name string, entry *state.Proposal) error {
	st, err := store.Load()
	if err != nil {
		return err
	}
	if err := st.Record(name, entry); err != nil {
		return err
	}
	return store.Save(st)
}

func checkPlan(ctx context.Context, s Steps, req Request) error {
	if s.RegistryVersion == nil {
		return errors.New("plan: cannot read the registry version")
	}
	v, err := s.RegistryVersion(ctx)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if err := req.Plan.Check(req.Proposal.PayloadSHA256, v); err != nil {
		return &StoppedError{Reason: err.Error(), Err: err}
	}
	return nil
}

func writeSummary(w io.Writer, req Request) {
	fmt.Fprintln(w)
	req.Proposal.Render(w)
	fmt.Fprintf(w, "  proposer: neuron %d\n", req.Neuron)
	fmt.Fprintf(w, "  identity: %s\n", req.Principal)
	fmt.Fprintf(w, "  host:     %s\n", req.Host)
}
