// Package kinds is the proposal kind as the unit of alp's code: each kind
// is one file holding its block's type and a typed Def, and one row of
// All. A Def is parameterised by the kind's block B (the nested block of
// its proposals, decoded by alpage/config with B's hcl tags and documented
// from its since and doc tags), its payload P (the Go value the NNS
// receives, Candid-encoded) and its facts F (what its preflight reads):
// *B builds a Payload[P], fetches and returns its own F and checks it;
// the Def says how P travels on-chain (Execute or Native), what an
// on-chain P changes, how a dry run of P is seeded, and what drift the
// kind proposes. Define erases a Def once into the Kind the table holds;
// the adapter is the one place a Body, Facts or decoded payload meets its
// type.
//
// The engines (alpage/config, proposal, preflight, dryrun, generate, the
// devnet) hold no list of kinds and no switch on one: they call a Kind.
// A new kind is one file here and one row in All (seventh_test.go writes
// one, a native action, which drift also produces). Each kind makes
// actions of one Shape, claims those and no other, and no two kinds of
// the table share one (TableProblems, over every shape an action can
// take). A kind generates from a Drift (fromdrift.go), which
// alpage/generate fills from the declaration and what reconcile read;
// each generated proposal lists the changes it waits on, and
// alpage/generate orders them by that.
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

// All lists every proposal kind, in documentation order: the table. A
// kind is a typed Def in a file of its own, erased once by Define into
// the Kind the engines hold.
var All = []Kind{
	membership,
	deployGuestOS,
	updateSubnet,
	removeNodes,
	removeNodeOperators,
	removeNodeProvider,
	addNodeOperator,
	updateNodeOperatorConfig,
	deployHostOS,
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
		if k.Shape().Function == fn {
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

// Kind is one proposal kind as the table holds it: a Def erased by
// Define. The engines call it with a proposal's Body (which must be of
// the kind's block type) and the Facts its Fetch returned; no kind
// implements it by hand.
type Kind interface {
	// Name is the kind as `kind = "…"` writes it, and the name of its
	// nested block.
	Name() string
	// Docs documents the nested block (first) and the blocks nested in
	// it, for docs/config.md.
	Docs() []BlockDoc
	// Shape is the one on-chain action shape its proposals make; no two
	// kinds of the table share one.
	Shape() Shape
	// New is an empty block of the kind to decode into.
	New() Body

	// LiveSubnet is the subnet whose live record b's payload inherits
	// parts of ("" when it inherits nothing).
	LiveSubnet(b Body) string
	// Build makes b's payload, against live (zero when offline), and the
	// action that carries it.
	Build(b Body, live Live) (*Built, error)
	// Labels are b's node blocks that carry labels, shown beside the ids
	// no resource block names.
	Labels(b Body) []NodeRef
	// Fetch reads, through r, the live state b's preflight needs: the
	// facts of the kind's own type.
	Fetch(ctx context.Context, b Body, r Reader) (Facts, error)
	// Check is b's preflight over f (what Fetch returned; nil is nothing
	// read): every finding, and whether the proposal would change nothing.
	Check(b Body, f Facts, o Options) (checks []Check, noop bool)

	// Claim decodes an on-chain action of the kind's Shape (mine); c is
	// nil when its payload does not decode. An action of another shape
	// is not the kind's, whatever it holds.
	Claim(a *nns.Action) (c *Claimed, mine bool)
	// Generate proposes the kind's proposals that close d's drift (none
	// for a change d.Pending holds), each listing in After the changes it
	// waits on, and notes the drift of its kind it cannot close.
	Generate(d *Drift) (proposals []Generated, notes []string)
}

// Body is a proposal's nested block: a pointer to its kind's block type,
// as the config decoder fills it. What it does needs none of the kind's
// types; the rest is its kind's (Block).
type Body interface {
	// Validate checks the decoded block at load, reporting through c.
	Validate(c Checker)
	// IDs visits every principal the block names, so the loader writes
	// each in canonical form.
	IDs(visit func(*string))
	// Closes is what a declared proposal of the kind changes on-chain.
	Closes() []Change
	// HCL writes the block as `alp plan --generate` writes it, indented
	// two spaces, each id through ref (a reference to the block that
	// declares it, else the id quoted).
	HCL(b *strings.Builder, ref func(id string) string)
}

// Block is what a kind's block does with the kind's own types: P is the
// Go value whose Candid encoding is the payload (not a pointer, which
// would encode as opt), F the facts its preflight reads.
type Block[P, F any] interface {
	Body
	// Build makes the payload, against live (zero when offline).
	Build(live Live) (Payload[P], error)
	// Fetch reads, through r, the live state Check needs.
	Fetch(ctx context.Context, r Reader) (F, error)
	// Check is the preflight over f: every finding, and whether the
	// proposal would change nothing.
	Check(f F, o Options) (checks []Check, noop bool)
}

// Def is one proposal kind, typed: B is its block's struct (a *B is a
// Block[P, F]), P its payload, F its preflight's facts. The fields say
// what needs no block; Define erases it for the table.
type Def[B any, P any, F any] struct {
	// Name is the kind as `kind = "…"` writes it, and its block's name.
	Name string
	// Since, Doc and Formerly document the kind's block (its header and
	// type are the kind's name and B); Nested documents the blocks
	// nested in it.
	Since, Doc, Formerly string
	Nested               []BlockDoc
	// Generates says what drift `alp plan --generate` proposes the kind
	// for ("for declared subnet admins"), as its help lists the kinds.
	Generates string
	// OnChain is how a payload travels on-chain (Execute or Native).
	OnChain OnChain[P]
	// Changes is what an on-chain payload of the kind changes.
	Changes func(p P) []Change
	// Seed reads, through s, the live records a dry run of p starts from.
	Seed func(ctx context.Context, s Seeder, p P) error
	// Generate proposes the kind's proposals that close d's drift.
	Generate func(d *Drift) ([]Generated, []string)

	// Optional.
	// LiveSubnet is the subnet whose live record the payload inherits
	// parts of.
	LiveSubnet func(b *B) string
	// Labels are the block's node blocks, whose labels name their ids.
	Labels func(b *B) []NodeRef
	// Effects says what an execution that succeeded did less than p
	// asked, from the local registry after it.
	Effects func(p P, reg LocalRegistry) []string
}

// Payload is a kind's payload, built.
type Payload[P any] struct {
	// Value is the payload.
	Value P
	// Render writes the kind's lines of the summary a person reviews.
	Render func(w io.Writer)
	// Declared is the payload the declaration alone makes, when Value
	// inherits parts of the live record (nil: Value is that).
	Declared *P
	// Former is the declaration alone in each earlier Candid type of the
	// payload, for a type that grew since a release that recorded
	// proposals of it.
	Former []any
	// Parts lists, field by field, what the payload sends of the fields
	// the registry replaces whole.
	Parts []Part
}

// Facts is what a kind's Fetch returned, erased: a value of the kind's
// facts type.
type Facts = any

// Built is a kind's payload built and erased: what the engines need of
// it, encoded once.
type Built struct {
	// Payload is the Candid encoding of the payload.
	Payload []byte
	// Declared is the encoding of the payload the declaration alone
	// makes: Payload when it inherits nothing.
	Declared []byte
	// Former are the encodings of the declaration alone in earlier types.
	Former [][]byte
	// Action carries the payload; Topic is its topic.
	Action *nns.ProposalActionRequest
	Topic  nns.Topic
	// Parts: Payload.Parts.
	Parts []Part
	// Render writes the kind's lines of the summary.
	Render func(w io.Writer)
}

// Claimed is an on-chain action a kind claimed, decoded.
type Claimed struct {
	// Changes is what the action changes.
	Changes []Change
	// Seed reads, through s, the live records a dry run of the action
	// starts from.
	Seed func(ctx context.Context, s Seeder) error
	// Effects says what an execution that succeeded did less than asked.
	Effects func(reg LocalRegistry) []string
	// Value is the payload decoded, for rendering only.
	Value any
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
	// HostOSVersionID says whether v is the name of a hostos_version
	// block, and its id.
	HostOSVersionID(v string) (id string, isName bool)
}

// Live is what a payload inherits from the live registry.
type Live struct {
	// Subnet is the record of the kind's LiveSubnet at the version the
	// command reads; nil when it was not read (an offline build).
	Subnet *nns.SubnetRecordPB
}

// BlockDoc documents one block of the schema.
type BlockDoc struct {
	// Header is how the block is written, e.g. `membership { }`.
	Header string
	Since  string
	Doc    string
	// Formerly notes an earlier name of the block.
	Formerly string
	Type     reflect.Type
	// Generates (a kind's block) says what drift --generate proposes it for.
	Generates string
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
