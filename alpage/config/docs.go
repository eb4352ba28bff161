package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
)

// BlockDoc describes one block of the schema for the reference docs.
type BlockDoc struct {
	// Header is how the block is written, e.g. `subnet "<name>" { }`.
	Header string
	// File is the file the block lives in at top level, or "" when nested.
	File  string
	Since string
	Doc   string
	// Formerly notes an earlier name of the block, for the history.
	Formerly string
	Type     reflect.Type
}

// Blocks is every block of the schema in documentation order. The fields of
// each come from the hcl, since and doc tags of its Type.
var Blocks = []BlockDoc{
	{Header: `subnet "<name>" { }`, File: "resources.hcl", Since: "v0.1.0", Type: reflect.TypeFor[Subnet](),
		Doc: "A subnet, referenced from proposals and nodes as subnet.<name>.id."},
	{Header: `data_center "<name>" { }`, File: "resources.hcl", Since: "v0.1.0", Type: reflect.TypeFor[DataCenter](),
		Doc: "A registry data center, referenced by node_operator as data_center.<name>.id."},
	{Header: `node_provider "<name>" { }`, File: "resources.hcl", Since: "v0.1.0", Type: reflect.TypeFor[NodeProvider](),
		Doc: "A node provider, referenced by node_operator as node_provider.<name>.id."},
	{Header: `node_operator "<name>" { }`, File: "resources.hcl", Since: "v0.1.0", Type: reflect.TypeFor[NodeOperator](),
		Doc: "A node operator, referenced by node as node_operator.<name>.id."},
	{Header: `guestos_version "<name>" { }`, File: "resources.hcl", Since: "v0.3.0", Type: reflect.TypeFor[GuestOSVersion](),
		Doc: "A named GuestOS/replica version, referenced by node and by deploy_guestos as guestos_version.<name>.id. alp guestos sync generates the elected set as resources/guestos.hcl."},
	{Header: `node "<name>" { }`, File: "resources.hcl", Since: "v0.1.0", Type: reflect.TypeFor[Node](),
		Doc: "A node, referenced from proposals as node.<name>.id."},
	{Header: `provider { }`, File: "proposals.hcl", Since: "v0.1.0", Type: reflect.TypeFor[Provider](),
		Doc: "Global submission settings; CLI flags override these."},
	{Header: `proposal "<name>" { }`, File: "proposals.hcl", Since: "v0.1.0", Type: reflect.TypeFor[Proposal](),
		Doc: "One NNS proposal. Carries common metadata plus a nested block named after its kind."},
	{Header: `membership { }`, Since: "v0.3.0", Type: reflect.TypeFor[Membership](), Formerly: "resize",
		Doc: "Nested in a proposal of kind \"membership\": change_subnet_membership. Holds add/remove node blocks. Renamed from resize in v0.3.0; a config written for v0.2.0 or earlier must rename the block and its kind."},
	{Header: `deploy_guestos { }`, Since: "v0.1.0", Type: reflect.TypeFor[DeployGuestOS](),
		Doc: "Nested in a proposal of kind \"deploy_guestos\": deploy_guestos_to_all_subnet_nodes."},
	{Header: `update_subnet { }`, Since: "v0.5.0", Type: reflect.TypeFor[UpdateSubnet](),
		Doc: "Nested in a proposal of kind \"update_subnet\": update_subnet (UPDATE_CONFIG_OF_SUBNET). Changes a subnet's configuration record. Every field is optional and an omitted one is left untouched on-chain, so a proposal changes exactly what it declares. Preflight diffs every declared field against the current record. Two payload fields are not settings here: subnet_type, which the registry asserts is unchanged, and a sev_enabled change, which it rejects outright."},
	{Header: `remove_nodes { }`, Since: "v0.5.0", Type: reflect.TypeFor[RemoveNodes](),
		Doc: "Nested in a proposal of kind \"remove_nodes\": deregisters nodes, freeing their operators' allowance. Holds one node block per node. The registry rejects a node that is still a subnet member, so remove it from its subnet first; preflight checks this before the proposal is cut."},
	{Header: `remove_node_operators { }`, Since: "v0.5.0", Type: reflect.TypeFor[RemoveNodeOperators](),
		Doc: "Nested in a proposal of kind \"remove_node_operators\": deletes node operator records. The registry silently skips an operator that still owns nodes, so deregister its nodes first; preflight checks this."},
	{Header: `remove_node_provider { }`, Since: "v0.5.0", Type: reflect.TypeFor[RemoveNodeProvider](),
		Doc: "Nested in a proposal of kind \"remove_node_provider\": removes a node provider. Unlike the other kinds this is a native governance action rather than an ExecuteNnsFunction. Governance rejects a provider it does not know, and removing one that still has operators orphans them; preflight checks both."},
	{Header: `add / remove { }`, Since: "v0.1.0", Type: reflect.TypeFor[NodeRef](),
		Doc: "Inside a membership block: a node to add to or remove from the subnet."},
	{Header: `features { }`, Since: "v0.5.0", Type: reflect.TypeFor[Features](),
		Doc: "Inside an update_subnet block: the subnet's feature flags. Sending it replaces the whole features record rather than merging, so all three fields are required: an omitted one would be written as false. sev_enabled must therefore restate what the subnet already has; the registry rejects a change to it."},
	{Header: `resource_limits { }`, Since: "v0.5.0", Type: reflect.TypeFor[ResourceLimits](),
		Doc: "Inside an update_subnet block: the subnet's state-size limits. Replaced wholesale like features, so both fields are required."},
}

// Releases are the schema's releases, oldest first; the last is the
// development schema documented ahead of its release.
var Releases = []string{"v0.1.0", "v0.1.1", "v0.2.0", "v0.3.0", "v0.4.0", "v0.5.0"}

// FieldDoc is one documented field of a block.
type FieldDoc struct {
	Name     string
	Kind     string // "attr" or "block"
	Required bool
	Since    string
	Doc      string
}

// Fields returns the documented fields of a block type, in declaration order.
func Fields(t reflect.Type) []FieldDoc {
	var out []FieldDoc
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok || f.Tag.Get("table") == "-" {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		if opt == "label" {
			continue
		}
		fd := FieldDoc{Name: name, Kind: "attr", Required: opt == "", Since: f.Tag.Get("since"), Doc: f.Tag.Get("doc")}
		if opt == "block" {
			fd.Kind, fd.Required = "block", false
		}
		out = append(out, fd)
	}
	return out
}

// Markdown renders the configuration reference (docs/config.md).
func Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("# alp configuration reference\n\n")
	b.WriteString("<!-- Generated by `go generate ./alpage/config` from the struct tags in alpage/config/schema.go. Do not edit. -->\n\n")
	fmt.Fprintf(&b, "alp's configuration is HCL. The blocks below are the complete schema, generated from the `hcl` struct tags the loader decodes with, so it always matches what the tool parses.\n\n")
	fmt.Fprintf(&b, "This page documents the current development schema (%s). The Since column gives the release each block and field first appeared in, so a field newer than your binary is visible as such; see Schema History for the schema as of each release.\n", Releases[len(Releases)-1])
	file := ""
	for _, blk := range Blocks {
		if blk.File != "" && blk.File != file {
			file = blk.File
			fmt.Fprintf(&b, "\n## %s\n", file)
			if note := fileNotes[file]; note != "" {
				fmt.Fprintf(&b, "\n%s\n", note)
			}
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n", blk.Header)
		fmt.Fprintf(&b, "Since %s. %s\n\n", blk.Since, blk.Doc)
		b.WriteString("| Field | Kind | Required | Since | Description |\n| --- | --- | --- | --- | --- |\n")
		for _, f := range Fields(blk.Type) {
			req := "no"
			if f.Required {
				req = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, f.Kind, req, f.Since, escapeCell(f.Doc))
		}
	}
	b.WriteString("\n## Schema History\n\nEach release's schema: the blocks and fields that existed in it, derived from the Since of each.\n")
	for _, rel := range Releases {
		fmt.Fprintf(&b, "\n### %s\n\n", rel)
		for _, blk := range Blocks {
			if !atOrBefore(blk.Since, rel) {
				if blk.Formerly != "" {
					fmt.Fprintf(&b, "- `%s` had an earlier form, `%s`, whose fields this reference does not describe.\n", blk.Header, blk.Formerly)
				}
				continue
			}
			var names []string
			for _, f := range Fields(blk.Type) {
				if atOrBefore(f.Since, rel) {
					names = append(names, "`"+f.Name+"`")
				}
			}
			fmt.Fprintf(&b, "- `%s`: %s\n", blk.Header, strings.Join(names, ", "))
		}
	}
	return b.Bytes()
}

// fileNotes is a paragraph under a file's heading.
var fileNotes = map[string]string{
	"proposals.hcl": "`alp plan --generate --out FILE` writes the proposal blocks that close the drift between the declared resources and the live registry " +
		"(membership, deploy_guestos, update_subnet for subnet admins, remove_nodes, remove_node_operators, remove_node_provider), in the order they must execute, " +
		"each with its title and summary written and its `url` left empty for the forum thread. Review them, append them to proposals.hcl, and `alp apply` each in order; " +
		"drift no proposal closes (a region, a chip id, a subnet type) is a note instead, and drift a declared proposal not yet executed, or an open one, already closes is not generated again.",
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// atOrBefore reports whether release a is at or before release b (both in
// Releases; an unknown release sorts last).
func atOrBefore(a, b string) bool { return releaseIndex(a) <= releaseIndex(b) }

func releaseIndex(r string) int {
	for i, x := range Releases {
		if x == r {
			return i
		}
	}
	return len(Releases)
}
