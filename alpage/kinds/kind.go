// Package kinds is the proposal kind as the unit of alp's code: each kind
// is one type, in one file, behind the Kind interface, and All lists them.
// A kind's type is the nested block of its proposals (decoded by
// alpage/config with the type's hcl tags and documented from its since
// and doc tags); its methods check the block at load, build the payload
// the NNS receives, fetch and check what its preflight needs, seed its dry
// run, say what a declared and an on-chain proposal of it change, and
// generate its proposals from drift and write their blocks as `alp plan
// --generate` does.
//
// The engines (alpage/config, proposal, preflight, dryrun, generate, the
// devnet) hold no list of kinds and no switch on one: they call a Kind's
// methods. A new kind is one file here and one line in All
// (seventh_test.go writes one, which drift also produces). A kind
// generates from a Drift (fromdrift.go), which alpage/generate fills from
// the declaration and what reconcile read; each generated proposal lists
// the changes it waits on, and alpage/generate orders them by that.
//
// What stays per method on the canister side is not the kind's: the
// Candid types of the registry's and governance's arguments (ic/nns) and
// the local registry's execution of each (ic/localnet/registry) are the
// canisters', and a kind names the function it runs.
package kinds

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// All lists every proposal kind, in documentation order. Each entry is
// the kind's zero value: what it says of itself needs no block.
var All = []Kind{
	&Membership{},
	&DeployGuestOS{},
	&UpdateSubnet{},
	&RemoveNodes{},
	&RemoveNodeOperators{},
	&RemoveNodeProvider{},
}

// Of is the kind named name, or nil.
func Of(name string) Kind {
	for _, k := range All {
		if k.Name() == name {
			return k
		}
	}
	return nil
}

// OfFunction is the kind whose proposals run fn, or nil (fn
// FunctionUnspecified: a native action, which no ExecuteNnsFunction is).
func OfFunction(fn nns.NnsFunction) Kind {
	if fn == nns.FunctionUnspecified {
		return nil
	}
	for _, k := range All {
		if k.Function() == fn {
			return k
		}
	}
	return nil
}

// Names lists the names of All, in order.
func Names() []string {
	out := make([]string, len(All))
	for i, k := range All {
		out[i] = k.Name()
	}
	return out
}

// Kind is one proposal kind. Its value is the kind's nested block as
// declared (a pointer to a struct the config decoder fills); the zero
// value answers Name, Docs, New, Function, NewPayload and Changes. The
// methods come in the order a proposal meets them: the schema, the load,
// the payload, preflight, the dry run, and drift.
type Kind interface {
	// Name is the kind as `kind = "…"` writes it, and the name of its
	// nested block.
	Name() string
	// Docs documents the nested block (first) and the blocks nested in
	// it, for docs/config.md.
	Docs() []BlockDoc
	// New is an empty block of the kind to decode into.
	New() Kind
	// Function is the NNS function its proposals run;
	// nns.FunctionUnspecified for a native governance action (the built
	// payload then carries the action: NativeAction).
	Function() nns.NnsFunction
	// NewPayload is a pointer to an empty payload of the kind's Candid
	// type, to decode a payload into.
	NewPayload() any

	// Validate checks the decoded block at load, reporting through c.
	Validate(c Checker)
	// IDs visits every principal the block names, so the loader writes
	// each in canonical form.
	IDs(visit func(*string))
	// LiveSubnet is the subnet whose live record the payload inherits
	// parts of ("" when it inherits nothing).
	LiveSubnet() string
	// Build makes the payload, against live (zero when offline).
	Build(live Live) (Built, error)

	// Fetch reads, through r, the live state Check needs into s.
	Fetch(ctx context.Context, r Reader, s *Snapshot) error
	// Check is the preflight over s: every finding, and whether the
	// proposal would change nothing.
	Check(s *Snapshot, o Options) (checks []Check, noop bool)

	// Seed reads, through s, the live records a dry run of payload (the
	// Go value Build made) starts from.
	Seed(ctx context.Context, s Seeder, payload any) error

	// Closes is what a declared proposal of the kind changes on-chain.
	Closes() []Change
	// Changes is what an on-chain action changes, when a proposal of the
	// kind makes it (mine); the zero value answers it.
	Changes(a *nns.Action) (changes []Change, mine bool)
	// Generate proposes the kind's proposals that close d's drift (none
	// for a change d.Pending holds), each listing in After the changes it
	// waits on, and notes the drift of its kind it cannot close.
	Generate(d *Drift) (proposals []Generated, notes []string)
	// HCL writes the block as `alp plan --generate` writes it, indented
	// two spaces, each id through ref (a reference to the block that
	// declares it, else the id quoted).
	HCL(b *strings.Builder, ref func(id string) string)
}

// Checker is what a kind's Validate reports through: the loader, at the
// kind's block of one proposal.
type Checker interface {
	// Proposal is the proposal's name.
	Proposal() string
	// At is where field is written in the block (in its i-th child
	// block of type child when child is not ""), else the block header.
	At(child string, i int, field string) hcl.Range
	// Header is the range of the block's header.
	Header() hcl.Range
	// Principal checks that id, written as field at where, is principal
	// text.
	Principal(field, id string, where hcl.Range)
	// Once refuses an id the proposal names a second time (what: "node",
	// "operator"): as the same field it would travel twice in the
	// payload, as two fields it contradicts itself.
	Once(what, field, id string, where hcl.Range)
	// Errorf reports an error at where.
	Errorf(where hcl.Range, summary, format string, args ...any)
	// VersionID says whether v is the name of a guestos_version block,
	// and its id.
	VersionID(v string) (id string, isName bool)
}

// Live is what a payload inherits from the live registry.
type Live struct {
	// Subnet is the record of the kind's LiveSubnet at the version the
	// command reads; nil when it was not read (an offline build).
	Subnet *nns.SubnetRecordPB
}

// Built is a kind's payload, built.
type Built interface {
	// Payload is the Go value (not a pointer, which would encode as opt)
	// whose Candid encoding is the payload.
	Payload() any
	// Render writes the kind's lines of the summary a person reviews.
	Render(w io.Writer)
}

// The optional parts of a Built.
type (
	// Inheritor is a payload that takes parts of the live record:
	// Declared is the payload the declaration alone makes.
	Inheritor interface{ Declared() any }
	// FormerEncoder is a payload whose Candid type grew since a release
	// that recorded proposals of it: Former is the declaration alone in
	// each earlier type.
	FormerEncoder interface{ Former() []any }
	// PartLister lists, field by field, what the payload sends of the
	// fields the registry replaces whole.
	PartLister interface{ Parts() []Part }
	// NativeAction is the payload of a native governance action.
	NativeAction interface {
		Action() *nns.ProposalActionRequest
		Topic() nns.Topic
	}
)

// BlockDoc documents one block of the schema.
type BlockDoc struct {
	// Header is how the block is written, e.g. `membership { }`.
	Header string
	Since  string
	Doc    string
	// Formerly notes an earlier name of the block.
	Formerly string
	Type     reflect.Type
}

// NodeRef is an add, remove (membership) or node (remove_nodes) block.
type NodeRef struct {
	ID    string `hcl:"id" since:"v0.1.0" doc:"Node id (node.<name>.id)."`
	Label string `hcl:"label,optional" since:"v0.1.0" doc:"Optional human-readable name."`
}

// MaxSubnetAdmins is the most admins a subnet may have.
const MaxSubnetAdmins = 10

// nodeIDs is the ids of refs.
func nodeIDs(refs []NodeRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// refIDs visits the id of each ref.
func refIDs(refs []NodeRef, visit func(*string)) {
	for i := range refs {
		visit(&refs[i].ID)
	}
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
