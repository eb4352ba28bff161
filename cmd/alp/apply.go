package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/dryrun"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/planfile"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/alpage/submit"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
	"alpnib.dev/internal/term"
)

// Exit codes of apply beyond 0, 1 and 2 (a check stopped it).
const (
	// exitLostRecord: the proposal was submitted but state.json could not
	// be written; the id was printed on stderr.
	exitLostRecord = 3
)

// Step timeouts: each bounds one stage of apply.
const (
	applyReadTimeout   = 2 * time.Minute
	applyDryRunTimeout = 3 * time.Minute
	applySubmitTimeout = 5 * time.Minute
)

// applyAfterSubmit runs right after a successful submit; tests use it to
// make the state file unwritable at exactly that moment.
var applyAfterSubmit = func() {}

func newApplyCmd(g *globals) *cobra.Command {
	var (
		identityPath string
		yes, force   bool
		autoApprove  bool
		strict       bool
		live         liveFlags
		output       string
	)
	cmd := &cobra.Command{
		Use:   "apply (<name> | PLANFILE [name]) [--identity key.pem] [--yes | --auto-approve] [--force]",
		Short: "Dry-run, check and submit one declared proposal, and record it in state.json",
		Long: `apply takes one declared proposal to the NNS:

  identity      load the PEM (--identity, else $ALP_IDENTITY) and say which principal
  state         the state.json rules: a terminal record is refused, the same payload
                is nothing to do, a changed payload or a record of another kind
                needs --force
  dry run       execute it on a fresh local NNS seeded with the live records it
                touches; a proposal that would fail on execution stops here
  neuron        a signed get_full_neuron proves the identity controls the neuron
                or is one of its hotkeys
  preflight     the checks of alp plan; anything but "ready" (a no-op included)
                needs --force
  summary       what would be submitted, its payload sha256, principal, host, neuron

Without --yes it stops there ("dry run only"). With --yes it asks you to type
submit, then makes the proposal and records it in state.json. With
--auto-approve (Terraform's -auto-approve) it submits without asking, for CI,
where no one is there to type; on a terminal it is refused unless --yes is
given too. In CI, after review of the plan:

  alp plan -out plan.bin                  # exit 0: every proposal is ready
  alp apply plan.bin NAME -auto-approve   # submits NAME as planned, or refuses
                                          # if the payload or registry moved

Submits are safe to retry. Before anything else apply looks governance up for a
proposal by the neuron with the same payload, made in the last 24 hours and not
recorded in state.json; found, it is recorded (outcome recorded) and nothing is
sent. A submit whose outcome is unknown (a timeout, a connection lost after the
call was sent, a 5xx) is looked up again the same way; found, it is recorded,
and not found, apply says so and submits nothing a second time.

Given a plan file written by alp plan -out, apply refuses when the payload or the
registry version moved since the plan.

With --output json the summary joins the progress on stderr and stdout gets one
JSON object: name, kind, payload_sha256, outcome (submitted, recorded,
dry-run-only, nothing-to-do, stopped, submitted-not-recorded), proposal_id, reason, principal,
neuron, neuron_access (controller or hotkey), host.

Exit status: 0 done (or dry run only, or nothing to do), 1 error, 2 a check stopped
it (nothing was submitted), 3 the proposal WAS submitted but state.json could not
be written — the proposal id and the alp import command that records it are
printed on stderr.`,
		// -auto-approve is Terraform's spelling (parseFlags).
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if help, err := parseFlags(cmd, args); help || err != nil {
				return err
			}
			if err := cobra.RangeArgs(1, 2)(cmd, cmd.Flags().Args()); err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if autoApprove && !yes && stdinIsTerminal(cmd) {
				return errors.New("--auto-approve submits without asking and is meant for CI; on a terminal give --yes too to mean it, or leave --auto-approve out and type submit at the prompt")
			}
			return runApply(cmd, g, applyOptions{args: cmd.Flags().Args(), identityPath: identityPath, yes: yes || autoApprove, autoApprove: autoApprove, force: force, strictPermissions: strict, live: live, json: output == "json"})
		},
	}
	outputFlag(cmd, &output)
	f := cmd.Flags()
	f.StringVar(&identityPath, "identity", "", "identity PEM (ed25519 or secp256k1) that controls the neuron or is its hotkey: flag > $ALP_IDENTITY")
	f.BoolVar(&yes, "yes", false, "go on past the summary: ask to type submit, then submit")
	f.BoolVar(&autoApprove, "auto-approve", false, "submit without the typed confirmation, for CI (also -auto-approve); refused on a terminal unless --yes is given too")
	f.BoolVar(&force, "force", false, "submit a changed payload, a no-op, or a proposal the dry run or preflight stopped")
	strictPermissionsFlag(cmd, &strict)
	live.register(cmd)
	return cmd
}

type applyOptions struct {
	args         []string
	identityPath string
	yes, force   bool
	// autoApprove submits without asking to type submit.
	autoApprove bool
	// strictPermissions refuses an identity file others can access.
	strictPermissions bool
	live              liveFlags
	// json: stdout gets one applyJSON object; the summary goes to stderr.
	json bool
}

// applyJSON is `alp apply --output json`.
type applyJSON struct {
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	PayloadSHA256 string `json:"payload_sha256"`
	// Outcome is submitted, recorded, dry-run-only, nothing-to-do, stopped (exit 2)
	// or submitted-not-recorded (exit 3).
	Outcome    string `json:"outcome"`
	ProposalID uint64 `json:"proposal_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Principal  string `json:"principal"`
	Neuron     uint64 `json:"neuron"`
	// NeuronAccess is controller or hotkey, once the check ran.
	NeuronAccess submit.Access `json:"neuron_access,omitempty"`
	Host         string        `json:"host"`
}

// The outcomes apply reports beyond submit.Outcome's.
const (
	outcomeStopped     = "stopped"
	outcomeNotRecorded = "submitted-not-recorded"
)

func runApply(cmd *cobra.Command, g *globals, o applyOptions) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	name, plan, planHost, err := applyTarget(cfg, o.args)
	if err != nil {
		return err
	}
	decl := cfg.Proposal(name)
	if decl == nil {
		return fmt.Errorf("proposal %q is not declared in %s", name, g.configPath)
	}
	host, _ := g.resolveHost(cfg)
	neuron, ok, err := g.resolveNeuron(cfg)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no proposer neuron: give --neuron, $ALP_NEURON or provider.neuron")
	}

	id, idPath, err := loadApplyIdentity(o.identityPath, o.strictPermissions, stderr)
	if err != nil {
		return err
	}
	stdout, summary := cmd.OutOrStdout(), cmd.OutOrStdout()
	if o.json {
		summary = stderr
	}
	report := applyJSON{Name: decl.Name, Kind: string(decl.Kind),
		Principal: id.Sender().String(), Neuron: neuron, Host: host}
	// stop ends an apply a check stopped: exit 2, and the JSON says why.
	stop := func(err error) error {
		report.Outcome, report.Reason = outcomeStopped, err.Error()
		if o.json {
			writeJSON(stdout, report)
		}
		return &exitError{code: 2, err: err}
	}
	if plan != nil && planHost != "" && planHost != host {
		return stop(fmt.Errorf("the plan was made against %s, not %s; run alp plan again", planHost, host))
	}
	// One submitting apply at a time per state file, from the state
	// decision to the record: two applies of one proposal must not both
	// find no record and both submit. The lock goes when apply returns,
	// interrupted or not. Without --yes apply writes nothing and submits
	// nothing, so dry runs need no lock and may run side by side.
	if o.yes {
		lock, err := state.Acquire(g.stateFile())
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	fmt.Fprintf(stderr, "identity: %s (%s)\n", id.Sender(), idPath)
	ag, network, err := g.newAgent(ctx, cfg, id, stderr)
	if err != nil {
		return err
	}
	// The registry version is read once, and every registry read of the
	// apply (the payload's live parts, the dry run's seed, preflight, the
	// plan's check) is at it.
	reg, err := pinLatest(ctx, nns.RegistryClient{Caller: ag})
	if err != nil {
		return err
	}
	gov := nns.GovernanceClient{Caller: ag}
	// The payload is built once, against the pinned version (the plan's
	// when there is one), and that proposal is what the dry run, preflight
	// and the submission are handed.
	p, err := buildAgainstLive(ctx, reg, decl, plan)
	if err != nil {
		return err
	}
	report.PayloadSHA256 = p.PayloadSHA256
	explorer := o.live.explorer()
	ns, err := nodeHealthClient()
	if err != nil {
		return err
	}
	steps := submit.Steps{
		DryRun:          applyDryRun{live: dryrun.Live{Registry: reg, Version: reg.version, Governance: gov, OperatorNodes: explorer.OperatorNodes}},
		Neuron:          applyNeuron{gov: gov, caller: id.Sender()},
		Preflight:       applyPreflight{decl: decl, force: o.force, names: preflight.NamesOf(&cfg.Resources), minimums: preflight.MinimumsOf(&cfg.Resources), res: &cfg.Resources, f: &preflight.Fetcher{Registry: reg, Governance: gov, Explorer: explorer, Dashboard: o.live.dashboard(), NodeStatus: ns}},
		Confirm:         confirmer(cmd, o.autoApprove),
		Submit:          applySubmit{gov},
		Store:           fileStore{g.stateFile(), network},
		Find:            submit.GovernanceFinder{Gov: gov},
		RegistryVersion: func(context.Context) (uint64, error) { return reg.version, nil },
	}
	res, err := submit.Apply(ctx, steps, submit.Request{Proposal: p, Principal: id.Sender(), Host: host, Neuron: neuron, Yes: o.yes, Force: o.force, Plan: plan},
		summary, stderr)
	var stopped *submit.StoppedError
	var lost *submit.LostRecordError
	switch {
	case errors.As(err, &lost):
		importCmd := fmt.Sprintf("alp import %s %d --config %s --state %s --host %s", lost.Name, lost.ProposalID,
			shellQuote(g.configPath), shellQuote(g.stateFile()), shellQuote(host))
		fmt.Fprint(stderr, term.For(stderr).Paint(term.Red, lost.Loud(importCmd)))
		report.Outcome, report.ProposalID, report.Reason = outcomeNotRecorded, lost.ProposalID, lost.Err.Error()
		if o.json {
			writeJSON(stdout, report)
		}
		return &exitError{code: exitLostRecord, err: err}
	case errors.As(err, &stopped):
		return stop(err)
	case err != nil:
		return err
	}
	if !o.json {
		printSafe(stdout, res.Message)
		return nil
	}
	printSafe(stderr, res.Message)
	report.Outcome, report.ProposalID, report.NeuronAccess = res.Outcome.String(), res.ProposalID, res.Access
	if res.Outcome != submit.Submitted {
		report.Reason = res.Message
	}
	return writeJSON(stdout, report)
}

// pinnedRegistry is the registry client of one command: every read is at
// version, and the latest version is version, read once (pinLatest).
type pinnedRegistry struct {
	nns.RegistryClient
	version uint64
}

// GetLatestVersion is the version the client is pinned to.
func (r pinnedRegistry) GetLatestVersion(context.Context) (uint64, error) { return r.version, nil }

// pinLatest reads the registry's latest version and pins reg to it.
func pinLatest(ctx context.Context, reg nns.RegistryClient) (pinnedRegistry, error) {
	ctx, cancel := context.WithTimeout(ctx, applyReadTimeout)
	defer cancel()
	v, err := reg.GetLatestVersion(ctx)
	if err != nil {
		return pinnedRegistry{}, fmt.Errorf("read the registry version: %w", err)
	}
	return pinnedRegistry{reg.At(v), v}, nil
}

// buildAgainstLive builds the payload against the live record it
// inherits from (its kind's LiveSubnet: update_subnet's target), read at
// the plan's registry version when there is a plan (the plan's check then
// refuses unless that is reg's), else at reg's.
func buildAgainstLive(ctx context.Context, reg pinnedRegistry, decl *config.Proposal, plan *planfile.Entry) (*proposal.Proposal, error) {
	subnet := ""
	if k := kinds.Of(string(decl.Kind)); k != nil && decl.Body != nil {
		subnet = k.LiveSubnet(decl.Body)
	}
	if subnet == "" {
		return proposal.Build(decl)
	}
	ctx, cancel := context.WithTimeout(ctx, applyReadTimeout)
	defer cancel()
	version := reg.version
	if plan != nil {
		version = plan.RegistryVersion
	}
	rec, err := preflight.SubnetRecord(ctx, reg, subnet, version)
	if err != nil {
		return nil, fmt.Errorf("read subnet %s, which the payload inherits from: %w", subnet, err)
	}
	return proposal.BuildLive(decl, proposal.Live{Subnet: rec})
}

// applyTarget reads the arguments: a declared proposal name, or a plan
// file (and the name within it when it planned several).
func applyTarget(cfg *config.Config, args []string) (name string, plan *planfile.Entry, planHost string, err error) {
	if cfg.Proposal(args[0]) != nil && len(args) == 1 {
		return args[0], nil, "", nil
	}
	if _, err := os.Stat(args[0]); err != nil {
		if len(args) == 1 {
			return "", nil, "", fmt.Errorf("%q is neither a declared proposal nor a plan file", args[0])
		}
		return "", nil, "", fmt.Errorf("plan file: %w", err)
	}
	f, err := planfile.Read(args[0])
	if err != nil {
		return "", nil, "", err
	}
	var e planfile.Entry
	switch {
	case len(args) == 2:
		var ok bool
		if e, ok = f.Lookup(args[1]); !ok {
			return "", nil, "", fmt.Errorf("plan file %s did not plan proposal %q", args[0], args[1])
		}
	case len(f.Proposals) == 1:
		e = f.Proposals[0]
	default:
		var names []string
		for _, p := range f.Proposals {
			names = append(names, p.Name)
		}
		return "", nil, "", fmt.Errorf("plan file %s planned %d proposals (%s); name the one to apply: alp apply %s NAME", args[0], len(names), strings.Join(names, ", "), args[0])
	}
	return e.Name, &e, f.Host, nil
}

// loadApplyIdentity reads the identity from path, else $ALP_IDENTITY
// (readIdentityFile: a warning on warn, or a refusal with strict, for a
// file others can access).
func loadApplyIdentity(path string, strict bool, warn io.Writer) (identity.Identity, string, error) {
	if path == "" {
		path = os.Getenv("ALP_IDENTITY")
	}
	if path == "" {
		return nil, "", errors.New("no identity: give --identity key.pem or set $ALP_IDENTITY (alp keygen --out makes one)")
	}
	data, err := readIdentityFile(path, strict, warn)
	if err != nil {
		return nil, "", fmt.Errorf("identity: %w", err)
	}
	id, err := identity.FromPEM(data)
	if err != nil {
		return nil, "", fmt.Errorf("identity %s: %w", path, err)
	}
	return id, path, nil
}

// applyDryRun gathers the seed from live state, every record at the
// version apply read, and runs the dry run.
type applyDryRun struct {
	live dryrun.Live
}

func (d applyDryRun) DryRun(ctx context.Context, p *proposal.Proposal, neuron uint64) (*dryrun.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, applyDryRunTimeout)
	defer cancel()
	seed, err := dryrun.Gather(ctx, d.live, p)
	if err != nil {
		return nil, err
	}
	return dryrun.Run(ctx, seed, p, neuron)
}

// applyNeuron is the signed get_full_neuron, as caller.
type applyNeuron struct {
	gov    nns.GovernanceClient
	caller principal.Principal
}

func (n applyNeuron) CheckNeuron(ctx context.Context, neuron uint64) (submit.Access, error) {
	ctx, cancel := context.WithTimeout(ctx, applyReadTimeout)
	defer cancel()
	full, err := n.gov.GetFullNeuron(ctx, neuron)
	var ge *nns.GovernanceError
	switch {
	case errors.As(err, &ge) && ge.ErrorType == nns.ErrorTypeNotAuthorized:
		return "", fmt.Errorf("the identity is neither the neuron's controller nor one of its hotkeys (%w)", err)
	case err != nil:
		return "", err
	}
	return submit.ClassifyAccess(n.caller, full)
}

// applyPreflight runs alp plan's checks in apply mode.
type applyPreflight struct {
	decl  *config.Proposal
	force bool
	// names are the block names of declared resources, as plan shows them.
	names map[string]string
	// minimums are the declared subnets' Nakamoto minimums.
	minimums map[string]map[string]int
	// res is the declared fleet, whose lines the proposal moves away from.
	res *config.Resources
	f   *preflight.Fetcher
}

// Preflight checks p, the proposal apply built and submits, against live
// state at the pinned version.
func (a applyPreflight) Preflight(ctx context.Context, p *proposal.Proposal) (*submit.Preflight, error) {
	ctx, cancel := context.WithTimeout(ctx, applyReadTimeout)
	defer cancel()
	r, err := a.f.Check(ctx, p, a.decl, preflight.Options{ForApply: true, Force: a.force, Names: a.names, Minimums: a.minimums})
	if err != nil {
		return nil, err
	}
	r = withDeclared(withURLCheck(r, a.decl), a.decl, a.res)
	return &submit.Preflight{Verdict: string(r.Verdict), Render: func(w io.Writer) {
		io.WriteString(w, "preflight: ")
		_ = renderSafe(w, func(w io.Writer, paint term.Painter) error { r.Render(w, paint); return nil })
	}}, nil
}

// applySubmit makes the proposal with the signed agent.
type applySubmit struct{ gov nns.GovernanceClient }

func (s applySubmit) Submit(ctx context.Context, p *proposal.Proposal, neuron uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, applySubmitTimeout)
	defer cancel()
	id, err := s.gov.MakeProposal(ctx, neuron, p.Request())
	if err == nil {
		applyAfterSubmit()
	}
	return id, err
}

// stdinConfirm asks for the word submit on stdin.
type stdinConfirm struct {
	in     io.Reader
	prompt io.Writer
}

// Confirm waits for a line on stdin, or for ctx to end (an interrupt), so
// Ctrl-C at the prompt stops apply and releases the state lock.
func (c stdinConfirm) Confirm(ctx context.Context, prompt string) error {
	fmt.Fprint(c.prompt, prompt)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(c.in).ReadString('\n')
		got <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		fmt.Fprintln(c.prompt)
		return fmt.Errorf("aborted at the prompt: %w", context.Cause(ctx))
	}
	if w, ok := c.in.(io.Writer); !ok || !term.IsTerminal(w) {
		fmt.Fprintln(c.prompt) // the answer was not echoed
	}
	if a.err != nil && a.line == "" {
		return errors.New("aborted: no answer (stdin is closed or not a terminal); type submit at the prompt to confirm, or, in CI, give --auto-approve instead of --yes")
	}
	if word := strings.TrimSpace(a.line); word != "submit" {
		return fmt.Errorf("aborted: you typed %q, not submit", word)
	}
	return ctx.Err()
}

// confirmer is what stands between the summary and the submission: the
// typed word on stdin, or with --auto-approve a line saying it was
// approved so.
func confirmer(cmd *cobra.Command, auto bool) submit.Confirmer {
	if auto {
		return autoApproved{cmd.ErrOrStderr()}
	}
	return stdinConfirm{in: cmd.InOrStdin(), prompt: cmd.ErrOrStderr()}
}

// autoApproved confirms without asking (--auto-approve) and says so.
type autoApproved struct{ progress io.Writer }

func (a autoApproved) Confirm(ctx context.Context, _ string) error {
	fmt.Fprintln(a.progress, "approved by --auto-approve: submitting")
	return ctx.Err()
}

// stdinIsTerminal reports whether cmd reads a terminal: a person is there
// to type submit.
func stdinIsTerminal(cmd *cobra.Command) bool {
	w, ok := cmd.InOrStdin().(io.Writer)
	return ok && term.IsTerminal(w)
}

// fileStore is state.json at a path, bound to the network apply talks
// to: a file recorded against another is refused before anything is
// submitted, and a new one records the network with its first proposal.
type fileStore struct {
	path    string
	network state.Network
}

func (s fileStore) Load() (*state.State, error) {
	st, err := state.Load(s.path)
	if err != nil {
		return nil, err
	}
	if _, err := st.Bind(s.path, s.network); err != nil {
		return nil, err
	}
	return st, nil
}

func (s fileStore) Save(st *state.State) error {
	if _, err := st.Bind(s.path, s.network); err != nil {
		return err
	}
	return st.Save(s.path)
}
