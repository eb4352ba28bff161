package hostconfig

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
)

//go:generate go test -run ^TestTheConfigReferenceIsCurrent$ -update .

// configSource is this package's config.go: the reference takes each
// key's description from its field's comment there, so the two cannot
// part.
//
//go:embed config.go
var configSource []byte

// Key is one key of config.toml as the reference describes it.
type Key struct {
	// Path is the dotted key (proxy.http.port); Section the table it is
	// in ("" for the top level).
	Path, Section string
	Type          string
	Required      bool
	Doc           string
}

// Section is one table of config.toml with its keys.
type Section struct {
	Name     string // "" for the top level, else "proxy.http"
	Optional bool
	Doc      string
	Keys     []Key
}

// Reference lists every section and key of config.toml, in the order of
// the Config type, each with its description from config.go. A key or a
// section with no comment there is an error naming it.
func Reference() ([]Section, error) {
	docs, err := parseDocs(configSource)
	if err != nil {
		return nil, err
	}
	r := &referencer{docs: docs}
	r.walk("", reflect.TypeFor[Config](), false, "", nil)
	if len(r.missing) > 0 {
		return nil, fmt.Errorf("config.go gives no description of %s: write a comment above each field", strings.Join(r.missing, ", "))
	}
	return r.sections, nil
}

// typeDocs are one struct type's comments: its own and each field's.
type typeDocs struct {
	doc    string
	fields map[string]string
}

func parseDocs(src []byte) (map[string]typeDocs, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parsing config.go: %w", err)
	}
	out := map[string]typeDocs{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			td := typeDocs{doc: paragraph(doc), fields: map[string]string{}}
			prev := ""
			for _, field := range st.Fields.List {
				text := paragraph(field.Doc)
				if text == "" {
					text = paragraph(field.Comment)
				}
				for _, name := range field.Names {
					switch {
					case text != "":
						td.fields[name.Name] = text
					case prev != "" && regexp.MustCompile(`\b`+name.Name+`\b`).MatchString(prev):
						// A comment that describes this field with the one
						// before it ("BodyTimeoutMs and SendTimeoutMs bound …").
						td.fields[name.Name] = prev
					}
				}
				if text != "" {
					prev = text
				}
			}
			out[ts.Name.Name] = td
		}
	}
	return out, nil
}

// paragraph is a comment as one line of text.
func paragraph(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

type referencer struct {
	docs     map[string]typeDocs
	sections []Section
	missing  []string
}

// walk adds the section of struct type t at prefix, then its subsections.
//
// A section's description is its type's comment, then its field's in the
// struct above it, less a sentence saying only that it may be absent
// (the reference says which sections are optional).
func (r *referencer) walk(prefix string, t reflect.Type, optional bool, fieldDoc string, parent reflect.Type) {
	td := r.docs[t.Name()]
	names := goToTOML(t)
	sec := Section{Name: prefix, Optional: optional}
	if prefix != "" {
		var parts []string
		if td.doc != "" {
			parts = append(parts, rename(td.doc, names, t.Name(), "["+prefix+"]"))
		}
		for _, sentence := range strings.SplitAfter(fieldDoc, ". ") {
			if sentence != "" && !strings.Contains(sentence, "may be absent") {
				parts = append(parts, rename(strings.TrimSpace(sentence), goToTOML(parent), goField(parent, prefix), "["+prefix+"]"))
			}
		}
		sec.Doc = strings.Join(parts, " ")
		if sec.Doc == "" {
			r.missing = append(r.missing, "["+prefix+"]")
		}
	}
	idx := len(r.sections)
	r.sections = append(r.sections, sec)
	type sub struct {
		name     string
		t        reflect.Type
		optional bool
		doc      string
	}
	var subs []sub
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := tomlName(f)
		if name == "-" || name == "" {
			continue
		}
		key := dotted(prefix, name)
		doc := td.fields[f.Name]
		if f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct {
			// One section per name: described once, as <name>.
			subs = append(subs, sub{key + ".<" + mapKeyWord(f.Type.Elem()) + ">", f.Type.Elem(), true, doc})
			continue
		}
		if isTable(f.Type) {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			subs = append(subs, sub{key, ft, optional || optionalSection(f.Type), doc})
			continue
		}
		if doc == "" {
			r.missing = append(r.missing, key)
		}
		r.sections[idx].Keys = append(r.sections[idx].Keys, Key{
			Path: key, Section: prefix, Type: typeWord(f.Type),
			Required: !optionalKey(f), Doc: rename(doc, names, f.Name, "`"+name+"`"),
		})
	}
	for _, s := range subs {
		r.walk(s.name, s.t, s.optional, s.doc, t)
	}
}

// mapKeyWord is what names one section of a table of them, in the
// reference: volumeId for a VolumeSchedule.
func mapKeyWord(t reflect.Type) string {
	if t.Name() == "VolumeSchedule" {
		return "volumeId"
	}
	return "name"
}

// goField is the Go name of the field of parent that holds the section at
// prefix (for a table of sections, prefix.<name>, the table's).
func goField(parent reflect.Type, prefix string) string {
	if strings.HasSuffix(prefix, ">") {
		prefix = prefix[:strings.LastIndex(prefix, ".")]
	}
	last := prefix[strings.LastIndex(prefix, ".")+1:]
	for i := 0; i < parent.NumField(); i++ {
		if f := parent.Field(i); tomlName(f) == last {
			return f.Name
		}
	}
	return ""
}

// goToTOML maps each field of t that is a key to its TOML name.
func goToTOML(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name := tomlName(f); name != "-" && name != "" {
			out[f.Name] = name
		}
	}
	return out
}

// rename turns a comment written for Go readers into one for a person
// editing the file: the name it starts with (Go's convention) becomes the
// key or section it describes, and so does each other field name written
// in camel case (BodyTimeoutMs); a field named by a plain word or an
// acronym (Port, TLS) is left alone inside a sentence, where it is the
// word.
func rename(doc string, names map[string]string, subject, as string) string {
	if subject != "" {
		doc = regexp.MustCompile(`^`+subject+`\b`).ReplaceAllString(doc, as)
	}
	for goName, key := range names {
		if camel(goName) {
			doc = regexp.MustCompile(`\b`+goName+`\b`).ReplaceAllString(doc, "`"+key+"`")
		}
	}
	return doc
}

// camel says whether a name is written in camel case: upper and lower
// case letters, more than one of them upper case.
func camel(name string) bool {
	upper, lower := 0, 0
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			upper++
		case r >= 'a' && r <= 'z':
			lower++
		}
	}
	return upper > 1 && lower > 0
}

func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "list of strings"
	}
	return t.Kind().String()
}

// ReferenceMarkdown renders docs/config-toml.md.
func ReferenceMarkdown() ([]byte, error) {
	secs, err := Reference()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("# nibrunnerd configuration reference: config.toml\n\n")
	b.WriteString("<!-- Generated by `go generate ./nibrunner/hostconfig` from the Config type and its comments in nibrunner/hostconfig/config.go. Do not edit. -->\n\n")
	b.WriteString("The daemon reads `" + DefaultPath + "` (or the file `" + EnvVar + "` names) once at start and validates it whole: " +
		"a missing required key is refused by name, and so is an unknown one (naming the key it was likely meant to be). " +
		"A section marked optional may be left out whole; an optional key left out takes the default its description gives, and an empty string or a 0 given for one is refused. " +
		"S3 credentials come from the environment, never from this file. " +
		"`nibrunnerd install` writes a working file, and `nibrunnerd config check FILE` validates one.\n\n")
	b.WriteString("## Sections\n\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "- [%s](#%s)\n", heading(s.Name), anchor(heading(s.Name)))
	}
	for _, s := range secs {
		fmt.Fprintf(&b, "\n## %s\n\n", heading(s.Name))
		if s.Optional {
			b.WriteString("Optional section. ")
		}
		if s.Doc != "" {
			b.WriteString(s.Doc)
		}
		if s.Optional || s.Doc != "" {
			b.WriteString("\n\n")
		}
		if len(s.Keys) == 0 {
			b.WriteString("No keys of its own; see the sections below.\n")
			continue
		}
		b.WriteString("| Key | Type | Required | Description |\n| --- | --- | --- | --- |\n")
		for _, k := range s.Keys {
			req := "yes"
			if !k.Required {
				req = "no"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Path, k.Type, req, strings.ReplaceAll(k.Doc, "|", `\|`))
		}
	}
	return []byte(b.String()), nil
}

func heading(section string) string {
	if section == "" {
		return "Top level"
	}
	return "[" + section + "]"
}

// anchor is GitHub's anchor of a heading: lowercase, punctuation but
// hyphens dropped, spaces as hyphens.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
