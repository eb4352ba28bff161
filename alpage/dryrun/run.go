package dryrun

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

// Result is what executing the proposal on the seeded local NNS did.
type Result struct {
	// Status is the local proposal's final status: executed or failed.
	Status nns.ProposalStatus
	// FailureReason is governance's failure reason (the registry's error)
	// when Status is failed.
	FailureReason string
	// Seeded counts the live records the local registry started from, and
	// Providers the node providers local governance knew.
	Seeded, Providers int
	// RegistryVersion is the live registry version the records were read
	// at (0: not pinned).
	RegistryVersion uint64
	// Changes are the registry records execution wrote, sorted by key.
	Changes []Change
	// Warnings are effects a person should know of although execution
	// succeeded (for example an operator the registry silently skipped).
	Warnings []string
	// Notes repeat the seed's notes.
	Notes []string
}

// Change is one registry record execution wrote.
type Change struct {
	Key     string
	Deleted bool
}

// Failed reports whether execution failed.
func (r *Result) Failed() bool { return r.Status != nns.StatusExecuted }

// Err is nil when execution succeeded, else the failure as an error.
func (r *Result) Err() error {
	if !r.Failed() {
		return nil
	}
	return fmt.Errorf("dry run: the proposal failed on execution, as it would on the NNS: %s", r.FailureReason)
}

// Render writes the result for a person.
func (r *Result) Render(w io.Writer) {
	seeded := plural(r.Seeded, "live registry record")
	if r.RegistryVersion != 0 {
		seeded += fmt.Sprintf(" (registry version %d)", r.RegistryVersion)
	}
	if r.Providers > 0 {
		seeded += " and " + plural(r.Providers, "node provider")
	}
	if r.Failed() {
		fmt.Fprintf(w, "dry run: FAILED on a local NNS seeded with %s: %s\n", seeded, r.FailureReason)
	} else {
		fmt.Fprintf(w, "dry run: executed on a local NNS seeded with %s\n", seeded)
	}
	for _, c := range r.Changes {
		verb := "writes"
		if c.Deleted {
			verb = "deletes"
		}
		fmt.Fprintf(w, "  %s %s\n", verb, c.Key)
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
	for _, s := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", s)
	}
}

// Run starts a fresh local NNS in this process (a localnet replica hosting
// registry and governance, with no voting period so a proposal is adopted
// and executed as it is made), seeds it, makes p from neuron through the IC
// HTTP interface exactly as it will be sent for real, and reads the result
// back. An error means the dry run itself could not run; a proposal that
// fails on execution is a Result with Failed() true.
func Run(ctx context.Context, seed *Seed, p *proposal.Proposal, neuron uint64) (*Result, error) {
	reg := registry.New()
	var muts []registry.Mutation
	for k, v := range seed.Records {
		muts = append(muts, registry.Mutation{Key: k, Value: v})
	}
	slices.SortFunc(muts, func(a, b registry.Mutation) int { return strings.Compare(a.Key, b.Key) })
	seeded := reg.Apply(muts)

	gov := governance.New(governance.Config{}, localnet.RegistryExecutor(reg))
	for _, id := range seed.Providers {
		gov.AddNodeProvider(id)
	}
	proposer, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	gov.AddNeuron(governance.Neuron{ID: neuron, Controller: proposer.Sender(), StakeE8s: 1e8})
	srv, err := localnet.New(localnet.Options{})
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	srv.InstallNNS(reg, gov)
	ag, err := agent.New(agent.Config{
		URL: "http://dry-run.invalid", Identity: proposer, FetchRootKey: true,
		HTTPClient: &http.Client{Transport: inProcess{srv}},
	})
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	gc := nns.GovernanceClient{Caller: ag}
	id, err := gc.MakeProposal(ctx, neuron, p.Request())
	if err != nil {
		// governance refused the proposal itself (title, action shape):
		// mainnet would refuse it the same way
		return &Result{Status: nns.StatusFailed, FailureReason: err.Error(), Seeded: len(seed.Records), Providers: len(seed.Providers), RegistryVersion: seed.RegistryVersion, Notes: seed.Notes}, nil
	}
	info, err := gc.GetProposalInfo(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("dry run: read the local proposal back: %w", err)
	}
	if info == nil {
		return nil, fmt.Errorf("dry run: the local governance lost proposal %d", id)
	}
	res := &Result{Status: nns.ProposalStatus(info.Status), Seeded: len(seed.Records), Providers: len(seed.Providers), RegistryVersion: seed.RegistryVersion, Notes: seed.Notes}
	if info.FailureReason != nil {
		res.FailureReason = info.FailureReason.ErrorMessage
	}
	if res.Status != nns.StatusExecuted && res.FailureReason == "" {
		res.FailureReason = "the local proposal ended " + res.Status.String()
	}
	res.Changes = changes(reg, seeded, seed.Records)
	if !res.Failed() {
		res.Warnings = effects(p, reg)
	}
	return res, nil
}

// changes lists the keys written after version since. A deleted key can
// only be one the seed wrote, so the candidates are those plus the keys
// live now.
func changes(reg *registry.Registry, since uint64, seeded map[string][]byte) []Change {
	seen := map[string]bool{}
	for k := range seeded {
		seen[k] = true
	}
	for _, k := range reg.Keys("") {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Change
	for _, k := range keys {
		h := reg.History(k)
		if len(h) == 0 {
			continue
		}
		if last := h[len(h)-1]; last.Version > since {
			out = append(out, Change{Key: k, Deleted: last.Value == nil})
		}
	}
	return out
}

// effects checks what the registry did against what the proposal asked
// for, for a kind whose execution may do less without failing
// (remove_node_operators skips an operator that still owns nodes).
func effects(p *proposal.Proposal, reg *registry.Registry) []string {
	if c, err := claimed(p); err == nil {
		return c.Effects(reg)
	}
	return nil
}

// inProcess is an http.RoundTripper that serves requests with a handler in
// this process: the dry run's replica needs no socket.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
