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

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
)

// Proposal is a declared proposal ready to submit.
type Proposal struct {
	Name    string
	Kind    config.Kind
	Title   string
	Summary string
	URL     string
	// Function is the NNS function an ExecuteNnsFunction proposal runs; zero
	// for remove_node_provider, which is a native governance action.
	Function nns.NnsFunction
	Topic    nns.Topic
	// Payload is the Candid encoding of the payload: the registry method's
	// argument, or for remove_node_provider the AddOrRemoveNodeProvider record.
	Payload []byte
	// Value is the payload's Go value: what Payload is the Candid
	// encoding of (what the dry run seeds from, without decoding it).
	Value any
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
	Body kinds.Kind
	// built is the kind's payload, for rendering.
	built kinds.Built
}

// Live is what a payload inherits from the live registry: the record of
// the subnet the kind names (kinds.Kind.LiveSubnet).
type Live = kinds.Live

// Build turns a loaded proposal into its payload and action, offline: an
// update_subnet payload inherits nothing (see BuildLive).
func Build(p *config.Proposal) (*Proposal, error) { return BuildLive(p, Live{}) }

// BuildLive is Build with the payload built against live.
func BuildLive(p *config.Proposal, live Live) (*Proposal, error) {
	if p.Body == nil {
		return nil, fmt.Errorf("proposal %q: kind %q has no block to build", p.Name, p.Kind)
	}
	built, err := p.Body.Build(live)
	if err != nil {
		return nil, fmt.Errorf("proposal %q: %w", p.Name, err)
	}
	value := built.Payload()
	payload, err := candid.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("proposal %q: encode payload: %w", p.Name, err)
	}
	fn := p.Body.Function()
	out := &Proposal{
		Name: p.Name, Kind: p.Kind, Title: p.Title, Summary: p.Summary, URL: p.URL,
		Function: fn, Payload: payload, Value: value, PayloadSHA256: sha256Hex(payload), Body: p.Body, built: built,
	}
	out.DeclaredSHA256 = out.PayloadSHA256
	if i, ok := built.(kinds.Inheritor); ok {
		if out.DeclaredSHA256, err = hashOf(i.Declared()); err != nil {
			return nil, fmt.Errorf("proposal %q: encode payload: %w", p.Name, err)
		}
	}
	if f, ok := built.(kinds.FormerEncoder); ok {
		for _, v := range f.Former() {
			sum, err := hashOf(v)
			if err != nil {
				return nil, fmt.Errorf("proposal %q: encode payload as an earlier release did: %w", p.Name, err)
			}
			out.FormerSHA256 = append(out.FormerSHA256, sum)
		}
	}
	switch native, ok := built.(kinds.NativeAction); {
	case fn != nns.FunctionUnspecified:
		out.Topic = fn.Topic()
		out.Action = &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: payload}}
	case ok:
		out.Topic, out.Action = native.Topic(), native.Action()
	default:
		return nil, fmt.Errorf("proposal %q: kind %q runs no NNS function and makes no native action", p.Name, p.Kind)
	}
	return out, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hashOf is the sha256 of v's Candid encoding.
func hashOf(v any) (string, error) {
	b, err := candid.Marshal(v)
	if err != nil {
		return "", err
	}
	return sha256Hex(b), nil
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
	if l, ok := p.built.(kinds.PartLister); ok {
		return l.Parts()
	}
	return nil
}

// MakeProposal is the manage_neuron command that submits p from neuron.
func (p *Proposal) MakeProposal(neuron uint64) *nns.ManageNeuronRequest {
	title := p.Title
	return &nns.ManageNeuronRequest{
		ID: &nns.NeuronID{ID: neuron},
		Command: &nns.ManageNeuronCommandRequest{MakeProposal: &nns.MakeProposalRequest{
			URL: p.URL, Title: &title, Summary: p.Summary, Action: p.Action,
		}},
	}
}

// Render writes what a person reviews before submitting p.
func (p *Proposal) Render(w io.Writer) {
	fmt.Fprintf(w, "proposal %q (%s)\n", p.Name, p.Kind)
	fmt.Fprintf(w, "  title:    %s\n", p.Title)
	if p.Function != nns.FunctionUnspecified {
		fmt.Fprintf(w, "  action:   ExecuteNnsFunction %s (%d)\n", p.Function, int32(p.Function))
	} else {
		fmt.Fprintf(w, "  action:   AddOrRemoveNodeProvider\n")
	}
	fmt.Fprintf(w, "  topic:    %s (%d)\n", p.Topic, int32(p.Topic))
	fmt.Fprintf(w, "  payload:  sha256 %s (%d bytes)\n", p.PayloadSHA256, len(p.Payload))
	p.built.Render(w)
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
