// Package proposal turns a declared proposal (alpage/config) into what the
// NNS receives: the Candid payload handed to the registry (or the native
// governance action), its NNS function and topic, the MakeProposal request,
// and a rendering a person reviews before submitting. Each kind lives in its
// own file; everything here is pure.
package proposal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
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
	// body is the kind's typed payload, for rendering.
	body kindBody
}

// kindBody is what every kind provides.
type kindBody interface {
	// payload is the Go value (not a pointer, which would encode as opt)
	// whose Candid encoding is the payload.
	payload() any
	// render writes the kind-specific lines of the summary.
	render(w io.Writer)
}

// inheritor is a kind whose payload takes parts from the live registry:
// declared is its payload built from the declaration alone.
type inheritor interface {
	declared() any
}

// formerEncoder is a kind whose payload's Candid type grew since a
// release that recorded proposals of it: former is the declaration
// alone in each earlier type.
type formerEncoder interface {
	former() []any
}

// Live is what a payload inherits from the live registry. update_subnet
// replaces features and resource_limits whole, so the parts of them its
// declaration cannot name (the query limits) are sent as the target
// subnet's record has them, as ic-admin's ResourceLimits::inherit_from
// does; without the record they would be reset.
type Live struct {
	// Subnet is the target subnet's record at the version the plan or
	// apply reads; nil when it was not read (an offline build).
	Subnet *nns.SubnetRecordPB
}

// Build turns a loaded proposal into its payload and action, offline: an
// update_subnet payload inherits nothing (see BuildLive).
func Build(p *config.Proposal) (*Proposal, error) { return BuildLive(p, Live{}) }

// BuildLive is Build with the payload built against live.
func BuildLive(p *config.Proposal, live Live) (*Proposal, error) {
	var (
		body kindBody
		fn   nns.NnsFunction
		err  error
	)
	switch p.Kind {
	case config.KindMembership:
		body, err = newMembership(p.Membership)
		fn = nns.FunctionChangeSubnetMembership
	case config.KindDeployGuestOS:
		body, err = newDeployGuestOS(p.DeployGuestOS)
		fn = nns.FunctionDeployGuestosToAllSubnetNodes
	case config.KindUpdateSubnet:
		body, err = newUpdateSubnet(p.UpdateSubnet, live.Subnet)
		fn = nns.FunctionUpdateConfigOfSubnet
	case config.KindRemoveNodes:
		body, err = newRemoveNodes(p.RemoveNodes)
		fn = nns.FunctionRemoveNodes
	case config.KindRemoveNodeOperators:
		body, err = newRemoveNodeOperators(p.RemoveNodeOperators)
		fn = nns.FunctionRemoveNodeOperators
	case config.KindRemoveNodeProvider:
		body, err = newRemoveNodeProvider(p.RemoveNodeProvider)
	default:
		return nil, fmt.Errorf("proposal %q: unknown kind %q", p.Name, p.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("proposal %q: %w", p.Name, err)
	}
	payload, err := candid.Marshal(body.payload())
	if err != nil {
		return nil, fmt.Errorf("proposal %q: encode payload: %w", p.Name, err)
	}
	out := &Proposal{
		Name: p.Name, Kind: p.Kind, Title: p.Title, Summary: p.Summary, URL: p.URL,
		Function: fn, Payload: payload, PayloadSHA256: sha256Hex(payload), body: body,
	}
	out.DeclaredSHA256 = out.PayloadSHA256
	if i, ok := body.(inheritor); ok {
		if out.DeclaredSHA256, err = hashOf(i.declared()); err != nil {
			return nil, fmt.Errorf("proposal %q: encode payload: %w", p.Name, err)
		}
	}
	if f, ok := body.(formerEncoder); ok {
		for _, v := range f.former() {
			sum, err := hashOf(v)
			if err != nil {
				return nil, fmt.Errorf("proposal %q: encode payload as an earlier release did: %w", p.Name, err)
			}
			out.FormerSHA256 = append(out.FormerSHA256, sum)
		}
	}
	if fn != nns.FunctionUnspecified {
		out.Topic = fn.Topic()
		out.Action = &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: payload}}
	} else {
		out.Topic = nns.TopicParticipantManagement
		action := body.payload().(nns.AddOrRemoveNodeProvider)
		out.Action = &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &action}
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
	if u, ok := p.body.(*updateSubnet); ok {
		return u.parts()
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
	p.body.render(w)
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

// principals decodes ids (already validated at load) naming field in errors.
func principals(field string, ids []string) ([]principal.Principal, error) {
	out := make([]principal.Principal, 0, len(ids))
	for _, id := range ids {
		p, err := principal.Decode(id)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", field, id, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func onePrincipal(field, id string) (principal.Principal, error) {
	p, err := principal.Decode(id)
	if err != nil {
		return principal.Principal{}, fmt.Errorf("%s %q: %w", field, id, err)
	}
	return p, nil
}

func writeList(w io.Writer, label string, ps []principal.Principal) {
	for _, p := range ps {
		fmt.Fprintf(w, "  %-9s %s\n", label+":", p)
	}
}
