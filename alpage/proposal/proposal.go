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
	"strings"

	"alpnib.dev/alpage/config"
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
	sum := sha256.Sum256(payload)
	out := &Proposal{
		Name: p.Name, Kind: p.Kind, Title: p.Title, Summary: p.Summary, URL: p.URL,
		Function: fn, Payload: payload, PayloadSHA256: hex.EncodeToString(sum[:]), body: body,
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
