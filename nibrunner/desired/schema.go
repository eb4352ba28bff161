package desired

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"time"
)

//go:generate go run ./genschema -docs ../../docs

// SchemaID is the $id of desired-state.schema.json: the address the seed
// tells editors to name in a document's $schema.
const SchemaID = "https://raw.githubusercontent.com/ilbertt/nibrunner/main/crates/protocol/schema/desired-state.schema.json"

// SchemaFile is the schema's file name under docs/.
const SchemaFile = "desired-state.schema.json"

// typeDocs are the seed's descriptions of the types that carry one.
var typeDocs = map[reflect.Type]string{
	reflect.TypeFor[HostDesiredState](): "What one host should be running. The daemon watches this document at the path its paths.desired_state_file names and converges on every change to it.",
	reflect.TypeFor[InitialContents]():  "What a volume holds before its app has written a byte: an archive in the store — a tar, gzipped or not, or a zip — unpacked under destinationPath in the app's root as the volume is formatted. That happens once, so this is read once: a volume already formatted is its app's, and a change here does nothing to it. An export this host wrote (its archive opens with a pax global header whose comment is \"nibrun-export v1\") restores a volume: with destinationPath \"/\" its data/ folder becomes the app's root — data/srv/x lands at /srv/x — with the same modes, mtimes and symlinks (owned by 65534, like every seeded entry), and its .env is left out. A checkpoint this host family wrote (its object opens with \"NIBSPRS\" and its format's digit) restores a volume whole: its image becomes the volume's, sparse, grown to sizeBytes when that is larger, and destinationPath is not read; one larger than sizeBytes, or of a format newer than the host reads, is refused and no volume is made.",
	reflect.TypeFor[DesiredLayer]():     "One read-only layer of the root filesystem an instance boots into. Layers stack in the order the document lists them, first at the bottom, and the app's volume is stacked writable over all of them. The kind says what the object is, and so what the host does with it: filesystem, a squashfs or ext4 image attached as it was uploaded; executable, one program packed into an image at destinationPath and run by the guest's own init.",
	reflect.TypeFor[Command]():          "What the guest runs once its root is stacked, as uid 65534: program with args, in workingDirectory, with environment. The working directory is made if it is not there, given to that uid, and is where the program's persistent state lives, because everything under the root persists on the volume and nowhere else is the program's to write.",
	reflect.TypeFor[HealthCheck]():      "What tells this host an instance is well — and so what a wake waits for before it hands the caller on, and what the instance's liveness is read from after that. Named in every document: http, path requested on httpPort answers 2xx; tcp, a connection to httpPort is accepted; boot-completed, the microVM is up and httpPort has accepted a connection once.",
	reflect.TypeFor[InstancePort]():     "A port a guest answers on beside its HTTP one, carried to it unread. It carries whatever arrives, tcp or udp.",
	reflect.TypeFor[SleepPolicy]():      "What puts a running microVM back to sleep. Only an on-request instance may carry one that fires: nothing else on this host would wake it again, and the next reconcile pass would bring it straight back up.",
	reflect.TypeFor[DesiredInstance]():  "One app's microVM. A running instance is replaced when, and only when, deploymentId changes. activation is refused beside idleTimeoutMs, and a sleepWhen other than never on anything but on-request.",
	reflect.TypeFor[DesiredExport]():    "A gzipped tar of a volume (under data/) and the app's environment (as .env) written to objectKey in the exports store. data/ is the app's root as it wrote it on the volume, with owners, modes, mtimes, symlinks and hard links. The data is read from a checkpoint taken for the export (the app's filesystem frozen for the copy while it runs), so it is consistent. .env holds one NAME=value line per variable, in name order, single-quoted where a shell would need it; an environment of {} gives an empty .env, and an absent one (unknown) gives none. Used as another volume's initialContents with destinationPath \"/\", the archive gives back the same files.",
}

// structExtras adds the cross-field rules a schema can say to a struct's
// definition.
var structExtras = map[reflect.Type]func(def map[string]any){
	reflect.TypeFor[DesiredInstance](): func(def map[string]any) {
		def["not"] = map[string]any{
			"properties": map[string]any{
				"activation":    map[string]any{"type": "object"},
				"idleTimeoutMs": map[string]any{"type": "integer"},
			},
			"required": []string{"activation", "idleTimeoutMs"},
		}
		def["if"] = map[string]any{
			"properties": map[string]any{"desiredState": map[string]any{"not": map[string]any{"const": string(StateOnRequest)}}},
			"required":   []string{"desiredState"},
		}
		def["then"] = map[string]any{
			"properties": map[string]any{"activation": map[string]any{"anyOf": []any{
				map[string]any{"type": "null"},
				map[string]any{"properties": map[string]any{"sleepWhen": map[string]any{
					"properties": map[string]any{"kind": map[string]any{"const": string(SleepNever)}},
				}}},
			}}},
		}
	},
}

// SchemaGen generates a draft 2020-12 JSON Schema from Go types, reading
// the same `json`/`nib` tags and scalar rules the decoder enforces.
type SchemaGen struct {
	ID   string
	Root reflect.Type
	// Enums and Docs add the status words and descriptions of types this
	// package does not know (reported.json's).
	Enums map[reflect.Type][]string
	Docs  map[reflect.Type]string
	// NullableOptional says an optional field may also be null (desired.json)
	// rather than only absent (reported.json).
	NullableOptional bool

	defs map[string]any
}

// Schema returns desired-state.schema.json.
func Schema() ([]byte, error) {
	return SchemaGen{ID: SchemaID, Root: reflect.TypeFor[HostDesiredState](), NullableOptional: true}.JSON()
}

// JSON renders the schema, indented, keys sorted, ending in a newline.
func (g SchemaGen) JSON() ([]byte, error) {
	g.defs = map[string]any{}
	root := g.structDef(g.Root)
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = g.ID
	root["title"] = g.Root.Name()
	root["$defs"] = g.defs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (g *SchemaGen) doc(t reflect.Type) string {
	if d, ok := g.Docs[t]; ok {
		return d
	}
	return typeDocs[t]
}

// ref returns the schema of a use of t: a $ref for a named type with a
// rule or a struct, the plain JSON type otherwise.
func (g *SchemaGen) ref(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		return g.ref(t.Elem())
	}
	if t == reflect.TypeFor[time.Time]() {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	_, hasRule := rules[t]
	_, hasEnum := g.Enums[t]
	if hasRule || hasEnum || t.Kind() == reflect.Struct {
		name := t.Name()
		if _, done := g.defs[name]; !done {
			g.defs[name] = map[string]any{} // reserve first: a type may refer to itself
			if t.Kind() == reflect.Struct {
				g.defs[name] = g.structDef(t)
			} else {
				g.defs[name] = g.scalarDef(t)
			}
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	return g.plain(t)
}

func (g *SchemaGen) plain(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "number"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint16:
		return map[string]any{"type": "integer", "minimum": 0, "maximum": math.MaxUint16}
	case reflect.Uint32:
		return map[string]any{"type": "integer", "minimum": 0, "maximum": math.MaxUint32}
	case reflect.Uint64, reflect.Uint:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.ref(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.ref(t.Elem())}
	}
	return map[string]any{}
}

func (g *SchemaGen) scalarDef(t reflect.Type) map[string]any {
	if words, ok := g.Enums[t]; ok {
		def := map[string]any{"type": "string", "enum": words}
		if d := g.doc(t); d != "" {
			def["description"] = d
		}
		return def
	}
	return ruleSchema(rules[t], g.plain(t), func(elem reflect.Type) map[string]any { return g.ref(elem) }, t)
}

// ruleSchema renders a scalar rule over the plain schema of its Go type.
func ruleSchema(r *scalarRule, def map[string]any, ref func(reflect.Type) map[string]any, t reflect.Type) map[string]any {
	if r.Description != "" {
		def["description"] = r.Description
	}
	if len(r.Enum) > 0 {
		def["enum"] = r.Enum
	}
	if r.Pattern != "" {
		def["pattern"] = r.Pattern
	}
	if r.MinLength > 0 {
		def["minLength"] = r.MinLength
	}
	if r.MaxLength > 0 {
		def["maxLength"] = r.MaxLength
	}
	if r.hasRange {
		def["minimum"], def["maximum"] = r.Minimum, r.Maximum
	}
	if len(r.Not) > 0 {
		def["not"] = map[string]any{"enum": r.Not}
	}
	if r.MaxItems > 0 {
		def["maxItems"] = r.MaxItems
	}
	if r.ItemMaxLength > 0 {
		def["items"] = map[string]any{"type": "string", "maxLength": r.ItemMaxLength}
	}
	if r.KeyPattern != "" {
		def["propertyNames"] = map[string]any{"pattern": r.KeyPattern}
		def["additionalProperties"] = ref(t.Elem())
	}
	return def
}

// field is one struct field as the schema sees it.
type field struct {
	name     string
	schema   map[string]any
	required bool
	variants []string
}

func (g *SchemaGen) fields(t reflect.Type) (kind *reflect.StructField, out []field) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		opts := parseOpts(f.Tag.Get("nib"))
		if opts.kind {
			kind = &f
			continue
		}
		s := g.ref(f.Type)
		if opts.minItems > 0 {
			s["minItems"] = opts.minItems
		}
		if opts.maxItems > 0 {
			s["maxItems"] = opts.maxItems
		}
		if r := fieldRules[opts.rule]; r != nil {
			s = ruleSchema(r, s, g.ref, f.Type)
		}
		if opts.optional && g.NullableOptional {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		out = append(out, field{name: jsonName(f), schema: s, required: !opts.optional, variants: opts.variants})
	}
	return kind, out
}

func (g *SchemaGen) structDef(t reflect.Type) map[string]any {
	kind, fields := g.fields(t)
	var def map[string]any
	if kind == nil {
		def = object(fields, "")
	} else {
		var words []string
		if r := rules[kind.Type]; r != nil {
			words = r.Enum
		} else {
			words = g.Enums[kind.Type]
		}
		var variants []any
		for _, w := range words {
			var fs []field
			for _, f := range fields {
				if f.variants == nil || contains(f.variants, w) {
					fs = append(fs, f)
				}
			}
			v := object(fs, jsonName(*kind))
			v["properties"].(map[string]any)[jsonName(*kind)] = map[string]any{"type": "string", "const": w}
			variants = append(variants, v)
		}
		def = map[string]any{"oneOf": variants}
	}
	if d := g.doc(t); d != "" {
		def["description"] = d
	}
	if extra := structExtras[t]; extra != nil {
		extra(def)
	}
	return def
}

// object is the schema of an object holding fields, with kind (when not
// empty) required first.
func object(fields []field, kind string) map[string]any {
	props := map[string]any{}
	required := []string{}
	if kind != "" {
		required = append(required, kind)
	}
	for _, f := range fields {
		props[f.name] = f.schema
		if f.required {
			required = append(required, f.name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}
