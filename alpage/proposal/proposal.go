// Package proposal turns a declared proposal (alpage/config) into what the
// NNS receives: the Candid payload handed to the registry (or the native
// governance action), its NNS function and topic, the MakeProposal request,
// and a rendering a person reviews before submitting. What is particular
// to a kind is the kind's (alpage/kinds); everything here is pure.
package proposal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
)

// Proposal is a declared proposal ready to submit.
type Proposal struct {
	Name    string
	Kind    config.Kind
	Title   string
	Summary string
	URL     string
	// Shape is the shape of the action its kind makes; Function is the
	// NNS function an ExecuteNnsFunction proposal runs, zero for a native
	// governance action (remove_node_provider's).
	Shape    kinds.Shape
	Function nns.NnsFunction
	Topic    nns.Topic
	// Payload is the Candid encoding of the payload: the registry method's
	// argument, or a native action's record (AddOrRemoveNodeProvider).
	Payload []byte
	// PayloadSHA256 is lowercase hex sha256 of Payload, what state.json pins.
	PayloadSHA256 string
	// DeclaredSHA256 is the sha256 of the payload the declaration alone
	// makes, built offline (inheriting nothing from the live registry);
	// PayloadSHA256 when the payload inherits nothing.
	DeclaredSHA256 string
	// FormerSHA256 are the sha256 of the declaration alone as earlier
	// releases of alp encoded it, before the payload's Candid type grew: a
	// record that pins one of them is of this same declaration.
	FormerSHA256 []string
	// Action is the MakeProposal action carrying the payload.
	Action *nns.ProposalActionRequest
	// Body is the declared block of the proposal's kind.
	Body kinds.Body
	// built is the kind's payload, for rendering.
	built *kinds.Built
}

// builds counts the payloads built in this process (Builds).
var builds atomic.Uint64

// Builds is how many payloads this process has built: a command builds
// each proposal's once (a test reads it).
func Builds() uint64 { return builds.Load() }

// Live is what a payload inherits from the live registry: the record of
// the subnet the kind names (kinds.Kind.LiveSubnet).
type Live = kinds.Live

// Build turns a loaded proposal into its payload and action, offline: an
// update_subnet payload inherits nothing (see BuildLive).
func Build(p *config.Proposal) (*Proposal, error) { return BuildLive(p, Live{}) }

// BuildLive is Build with the payload built against live.
func BuildLive(p *config.Proposal, live Live) (*Proposal, error) {
	k := kinds.Of(string(p.Kind))
	if p.Body == nil || k == nil {
		return nil, fmt.Errorf("proposal %q: kind %q has no block to build", p.Name, p.Kind)
	}
	builds.Add(1)
	built, err := k.Build(p.Body, live)
	if err != nil {
		return nil, fmt.Errorf("proposal %q: %w", p.Name, err)
	}
	out := &Proposal{
		Name: p.Name, Kind: p.Kind, Title: p.Title, Summary: p.Summary, URL: p.URL,
		Shape: k.Shape(), Function: k.Shape().Function, Topic: built.Topic, Action: built.Action,
		Payload: built.Payload, PayloadSHA256: sha256Hex(built.Payload), DeclaredSHA256: sha256Hex(built.Declared),
		Body: p.Body, built: built,
	}
	for _, f := range built.Former {
		out.FormerSHA256 = append(out.FormerSHA256, sha256Hex(f))
	}
	return out, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Pins reports whether sum is the hash of this declaration's payload:
// as built (live parts included), as the declaration alone makes it, or
// as an earlier release encoded the declaration alone.
func (p *Proposal) Pins(sum string) bool {
	return sum == p.PayloadSHA256 || sum == p.DeclaredSHA256 || slices.Contains(p.FormerSHA256, sum)
}

// Recorded reports whether rec records this declaration's payload. A
// record that says what the declaration alone hashed to (DeclaredSHA256)
// is compared by that, so the live parts the payload inherited, which an
// offline build cannot know, do not count; else by the payload's hash.
func (p *Proposal) Recorded(rec *state.Proposal) bool {
	if rec == nil {
		return false
	}
	if rec.PayloadSHA256 == p.PayloadSHA256 {
		return true
	}
	if rec.DeclaredSHA256 != "" {
		return rec.DeclaredSHA256 == p.DeclaredSHA256 || slices.Contains(p.FormerSHA256, rec.DeclaredSHA256)
	}
	return p.Pins(rec.PayloadSHA256)
}

// DeclaredToRecord is what a record keeps as declared_sha256: the hash
// of the declaration alone when the payload inherited live parts and so
// hashes otherwise, else "" (the payload's hash says it).
func (p *Proposal) DeclaredToRecord() string {
	if p.DeclaredSHA256 == p.PayloadSHA256 {
		return ""
	}
	return p.DeclaredSHA256
}

// Parts lists, for update_subnet, what the payload sends of each field
// the registry replaces whole and what the live record carries beyond
// the payload; nil for other kinds.
func (p *Proposal) Parts() []Part {
	if p.built == nil {
		return nil
	}
	return p.built.Parts
}

// Request is the MakeProposal command that submits p: the one request
// both the dry run and the submission send (governance's manage_neuron
// wraps it with the neuron).
func (p *Proposal) Request() nns.MakeProposalRequest {
	title := p.Title
	return nns.MakeProposalRequest{URL: p.URL, Title: &title, Summary: p.Summary, Action: p.Action}
}

// Render writes what a person reviews before submitting p.
func (p *Proposal) Render(w io.Writer) {
	fmt.Fprintf(w, "proposal %q (%s)\n", p.Name, p.Kind)
	fmt.Fprintf(w, "  title:    %s\n", p.Title)
	if p.Function != nns.FunctionUnspecified {
		fmt.Fprintf(w, "  action:   ExecuteNnsFunction %s (%d)\n", p.Function, int32(p.Function))
	} else {
		action, _, _ := strings.Cut(p.Shape.Path, ".")
		fmt.Fprintf(w, "  action:   %s\n", action)
	}
	fmt.Fprintf(w, "  topic:    %s (%d)\n", p.Topic, int32(p.Topic))
	fmt.Fprintf(w, "  payload:  sha256 %s (%d bytes)\n", p.PayloadSHA256, len(p.Payload))
	if p.built != nil {
		p.built.Render(w)
	}
	if p.URL != "" {
		fmt.Fprintf(w, "  url:      %s\n", p.URL)
	}
	if s := strings.TrimSpace(p.Summary); s != "" {
		fmt.Fprintf(w, "  summary:  %s\n", firstLine(s))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
