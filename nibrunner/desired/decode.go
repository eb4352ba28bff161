package desired

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"alpnib.dev/internal/suggest"
)

// A Reason is one rule a document breaks, at one JSON path
// (instances[2].config.command.environment.FOO). An empty Path is the
// document itself.
type Reason struct {
	Path string
	Rule string
}

func (r Reason) String() string {
	if r.Path == "" {
		return r.Rule
	}
	return r.Path + ": " + r.Rule
}

// Refusal is the error Decode returns: every reason the document is
// refused whole, those of single fields in document order first, then
// those across fields and entries.
type Refusal struct {
	Reasons []Reason
}

func (r *Refusal) Error() string {
	parts := make([]string, len(r.Reasons))
	for i, reason := range r.Reasons {
		parts[i] = reason.String()
	}
	return strings.Join(parts, "; ")
}

// MaxDocumentBytes is the largest document Decode reads. Decoding builds
// a tree of the whole document first, about 20 times its size in memory,
// under the daemon's lock; a thousand apps with generous environments are
// a few MiB.
const MaxDocumentBytes = 16 << 20

// TooLarge is the rule a document over MaxDocumentBytes breaks, in the
// words every reader of one says it with: Decode, the watcher that reads
// at most one byte more than the limit, and the fleet's poll of an S3
// object, which puts the object's name and size before it.
func TooLarge() string {
	return fmt.Sprintf("is larger than %d bytes (16 MiB), the most that is read: a host's document is far smaller, so this one was written wrong (a log or a binary in its place?)", MaxDocumentBytes)
}

// writeWhole is what to do about a document that was read unfinished.
const writeWhole = "write the whole document to a temporary file in the same folder and rename it into place, so the host never reads it half-written"

// Decode reads a desired.json document and enforces every rule of the seed:
// each scalar's pattern and range, required fields, and the cross-field
// rules. Unknown properties are ignored and null is the same as absent for
// an optional field. A document breaking any rule is refused whole: the
// error is a *Refusal naming each path and rule.
//
// Problems the spec charges to one instance rather than the document (see
// InstanceProblems) do not refuse it.
func Decode(data []byte) (*HostDesiredState, error) {
	doc, _, err := DecodeFields(data, FieldWarn)
	return doc, err
}

// FieldValidation is what decoding does with a property the document's
// types do not have, named after the Kubernetes API server's
// fieldValidation levels.
type FieldValidation int

const (
	// FieldWarn ignores an unknown property, as the seed says, and
	// returns a warning naming it (the API server's default, Warn).
	FieldWarn FieldValidation = iota
	// FieldStrict refuses the document for it (Strict; check --strict).
	FieldStrict
)

// DecodeFields is Decode returning also a warning for each property it
// ignored: one the type has not (with the known property it is nearest
// to, "did you mean memoryMib?"), or one of another kind of a tagged
// union. Warnings come with a refusal too, since a typo is often its
// cause (memoryMB ignored, so memoryMib is missing). Under FieldStrict
// they are reasons of the refusal instead, and no warning is returned.
func DecodeFields(data []byte, fv FieldValidation) (*HostDesiredState, []Reason, error) {
	d := &decoder{}
	doc, err := d.decode(data)
	if fv == FieldStrict && len(d.warnings) > 0 {
		var r *Refusal
		if !errors.As(err, &r) {
			r = &Refusal{}
		}
		// The unknown properties first: a typo among them is often
		// why a required field is missing.
		r.Reasons = append(d.warnings, r.Reasons...)
		for i := range d.warnings {
			r.Reasons[i].Rule = strings.Replace(r.Reasons[i].Rule, ", ignored", "", 1)
		}
		return nil, nil, r
	}
	return doc, d.warnings, err
}

func (d *decoder) decode(data []byte) (*HostDesiredState, error) {
	if len(data) > MaxDocumentBytes {
		return nil, &Refusal{Reasons: []Reason{{Rule: TooLarge()}}}
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, &Refusal{Reasons: []Reason{{Rule: "is not JSON: it starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow; save it as UTF-8 without one"}}}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		var syntax *json.SyntaxError
		switch {
		case errors.As(err, &syntax):
			return nil, &Refusal{Reasons: []Reason{{Rule: fmt.Sprintf("is not JSON: %v (at byte %d)", err, syntax.Offset)}}}
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0:
			return nil, &Refusal{Reasons: []Reason{{Rule: "is empty: " + writeWhole}}}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &Refusal{Reasons: []Reason{{Rule: fmt.Sprintf("is not JSON: it ends after %d bytes in the middle of a value, as a file read while it is written does: %s", len(data), writeWhole)}}}
		}
		return nil, &Refusal{Reasons: []Reason{{Rule: "is not JSON: " + err.Error()}}}
	}
	// Anything but the end after the value: a token, or bytes that are
	// none (a stray "}" is a syntax error to Token, not an end).
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Refusal{Reasons: []Reason{{Rule: fmt.Sprintf("is not one JSON value: something follows the document at byte %d", dec.InputOffset())}}}
	}
	if dups := duplicateKeys(data); len(dups) > 0 {
		// The tree kept the last of each silently: refused before anything
		// is read from either.
		return nil, &Refusal{Reasons: dups}
	}
	var doc HostDesiredState
	d.value("", tree, reflect.ValueOf(&doc).Elem())
	d.crossField(&doc)
	if len(d.reasons) > 0 {
		return nil, &Refusal{Reasons: d.reasons}
	}
	return &doc, nil
}

// Reasons returns the reasons of a *Refusal, or the error itself as one
// reason when err is something else.
func Reasons(err error) []Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reasons
	}
	if err == nil {
		return nil
	}
	return []Reason{{Rule: err.Error()}}
}

type decoder struct {
	reasons []Reason
	// warnings name the properties ignored (DecodeFields).
	warnings []Reason
}

func (d *decoder) fail(path, format string, args ...any) {
	d.reasons = append(d.reasons, Reason{Path: path, Rule: fmt.Sprintf(format, args...)})
}

// fieldOpts are the parsed `nib` tag of one struct field.
type fieldOpts struct {
	optional           bool
	kind               bool
	variants           []string
	minItems, maxItems int
	rule               string
}

func parseOpts(tag string) fieldOpts {
	var o fieldOpts
	for _, part := range strings.Split(tag, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "optional":
			o.optional = true
		case "kind":
			o.kind = true
		case "variant":
			o.variants = strings.Split(v, "|")
		case "minItems":
			o.minItems, _ = strconv.Atoi(v)
		case "maxItems":
			o.maxItems, _ = strconv.Atoi(v)
		case "rule":
			o.rule = v
		}
	}
	return o
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// value checks the JSON value v against dst's type and stores it in dst.
func (d *decoder) value(path string, v any, dst reflect.Value) {
	t := dst.Type()
	if t.Kind() == reflect.Pointer {
		if v == nil {
			return
		}
		p := reflect.New(t.Elem())
		d.value(path, v, p.Elem())
		dst.Set(p)
		return
	}
	rule := rules[t]
	switch t.Kind() {
	case reflect.Struct:
		d.object(path, v, dst)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.fail(path, "must be a string")
			return
		}
		if rule != nil {
			if broken := rule.checkString(s); broken != "" {
				d.fail(path, "%s", broken)
				return
			}
		}
		dst.SetString(s)
	case reflect.Int, reflect.Int64, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.integer(path, v, dst, rule)
	case reflect.Float64:
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			d.fail(path, "must be a number")
			return
		}
		dst.SetFloat(f)
	case reflect.Slice:
		d.array(path, v, dst, rule, fieldOpts{})
	case reflect.Map:
		d.object2map(path, v, dst, rule)
	default:
		d.fail(path, "has no decoder for Go type %s", t)
	}
}

func (d *decoder) integer(path string, v any, dst reflect.Value, rule *scalarRule) {
	n, ok := v.(json.Number)
	if !ok {
		d.fail(path, "must be an integer")
		return
	}
	lo, hi := intBounds(dst.Type())
	if rule != nil && rule.hasRange {
		lo, hi = float64(rule.Minimum), float64(rule.Maximum)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) {
		d.fail(path, "must be an integer, not %s", n)
		return
	}
	if f < lo || f > hi {
		d.fail(path, "%s", outOfRange(string(n), lo, hi))
		return
	}
	// Exact parse where possible: a float64 loses precision past 2^53.
	switch dst.Kind() {
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			if f >= 1<<63 || f < -(1<<63) {
				d.fail(path, "%s", outOfRange(string(n), lo, hi))
				return
			}
			i = int64(f)
		}
		dst.SetInt(i)
	default:
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil {
			if f >= 1<<64 {
				d.fail(path, "%s", outOfRange(string(n), lo, hi))
				return
			}
			u = uint64(f)
		}
		dst.SetUint(u)
	}
}

// outOfRange says which range n missed, leaving out a bound that is only
// the Go type's (a uint64 is "0 or more", not "0 to 18446744073709551615").
func outOfRange(n string, lo, hi float64) string {
	switch {
	case hi >= math.MaxInt64 && lo <= math.MinInt64:
		return n + " is out of range"
	case hi >= math.MaxInt64:
		return fmt.Sprintf("%s is out of range: must be %s or more", n, fmtBound(lo))
	default:
		return fmt.Sprintf("%s is out of range: must be %s to %s", n, fmtBound(lo), fmtBound(hi))
	}
}

func fmtBound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func intBounds(t reflect.Type) (float64, float64) {
	switch t.Kind() {
	case reflect.Uint16:
		return 0, math.MaxUint16
	case reflect.Uint32:
		return 0, math.MaxUint32
	case reflect.Uint64:
		return 0, math.MaxUint64
	default:
		return math.MinInt64, math.MaxInt64
	}
}

func (d *decoder) array(path string, v any, dst reflect.Value, rule *scalarRule, opts fieldOpts) {
	items, ok := v.([]any)
	if !ok {
		d.fail(path, "must be an array")
		return
	}
	maxItems := opts.maxItems
	if rule != nil && rule.MaxItems > 0 {
		maxItems = rule.MaxItems
	}
	switch {
	case opts.minItems > 0 && len(items) < opts.minItems && maxItems > 0:
		d.fail(path, "has %d items; it must have %d to %d", len(items), opts.minItems, maxItems)
		return
	case opts.minItems > 0 && len(items) < opts.minItems:
		d.fail(path, "has %d items; it must have at least %d", len(items), opts.minItems)
		return
	case maxItems > 0 && len(items) > maxItems && opts.minItems > 0:
		d.fail(path, "has %d items; it must have %d to %d", len(items), opts.minItems, maxItems)
		return
	case maxItems > 0 && len(items) > maxItems:
		d.fail(path, "has %d items; at most %d are allowed", len(items), maxItems)
		return
	}
	out := reflect.MakeSlice(dst.Type(), len(items), len(items))
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		if rule != nil && rule.ItemMaxLength > 0 {
			s, ok := item.(string)
			if !ok {
				d.fail(p, "must be a string")
				continue
			}
			if n := len([]rune(s)); n > rule.ItemMaxLength {
				d.fail(p, "is %d characters; at most %d are allowed", n, rule.ItemMaxLength)
				continue
			}
		}
		d.value(p, item, out.Index(i))
	}
	dst.Set(out)
}

func (d *decoder) object2map(path string, v any, dst reflect.Value, rule *scalarRule) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be an object")
		return
	}
	out := reflect.MakeMapWithSize(dst.Type(), len(m))
	for _, k := range sortedKeys(m) {
		p := join(path, k)
		if rule != nil && rule.keyMatch != nil && !rule.keyMatch.MatchString(k) {
			d.fail(p, "%s is not a variable name (%s)", quote(k), rule.KeyPattern)
			continue
		}
		ev := reflect.New(dst.Type().Elem()).Elem()
		before := len(d.reasons)
		d.value(p, m[k], ev)
		if len(d.reasons) == before {
			out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), ev)
		}
	}
	dst.Set(out)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// structField is one struct field as the decoder sees it, computed once
// per type.
type structField struct {
	index int
	name  string
	opts  fieldOpts
}

var structFields sync.Map // reflect.Type -> []structField

func fieldsOf(t reflect.Type) []structField {
	if fs, ok := structFields.Load(t); ok {
		return fs.([]structField)
	}
	fs := make([]structField, t.NumField())
	for i := range fs {
		f := t.Field(i)
		fs[i] = structField{index: i, name: jsonName(f), opts: parseOpts(f.Tag.Get("nib"))}
	}
	structFields.Store(t, fs)
	return fs
}

// object decodes a JSON object into a struct, field by field. A struct
// with a `nib:"kind"` field is a tagged union: its kind is read first and
// decides which `variant=` fields apply.
func (d *decoder) object(path string, v any, dst reflect.Value) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be an object")
		return
	}
	fields := fieldsOf(dst.Type())
	kind, kindKnown := "", true
	for _, f := range fields {
		if !f.opts.kind {
			continue
		}
		before := len(d.reasons)
		if raw, ok := m[f.name]; !ok || raw == nil {
			d.fail(join(path, f.name), "is required")
		} else {
			d.value(join(path, f.name), raw, dst.Field(f.index))
		}
		kind = dst.Field(f.index).String()
		kindKnown = len(d.reasons) == before
	}
	for _, f := range fields {
		opts := f.opts
		if opts.kind {
			continue
		}
		if opts.variants != nil && (!kindKnown || !contains(opts.variants, kind)) {
			continue
		}
		p := join(path, f.name)
		raw, present := m[f.name]
		if !present || raw == nil {
			if !opts.optional {
				d.fail(p, "is required")
			}
			continue
		}
		if r := fieldRules[opts.rule]; r != nil {
			if s, ok := raw.(string); ok {
				if broken := r.checkString(s); broken != "" {
					d.fail(p, "%s", broken)
					continue
				}
			}
		}
		dv := dst.Field(f.index)
		if dv.Kind() == reflect.Slice && (opts.minItems > 0 || opts.maxItems > 0) {
			d.array(p, raw, dv, rules[dv.Type()], opts)
			continue
		}
		d.value(p, raw, dv)
	}
	d.unknown(path, m, fields, kind, kindKnown)
}

// unknown warns of each property of m that the struct does not read: one
// it has not, with the nearest of those it has, or one that belongs to
// another kind of the union.
func (d *decoder) unknown(path string, m map[string]any, fields []structField, kind string, kindKnown bool) {
	var names []string
	byName := map[string]structField{}
	for _, f := range fields {
		byName[f.name] = f
		if f.opts.variants == nil || (kindKnown && contains(f.opts.variants, kind)) {
			names = append(names, f.name)
		}
	}
	for _, k := range sortedKeys(m) {
		f, known := byName[k]
		switch {
		case !known:
			rule := "unknown property, ignored"
			if near, ok := suggest.Nearest(k, names); ok {
				rule += ": did you mean " + near + "?"
			} else if len(names) <= 12 {
				rule += ": the properties here are " + strings.Join(names, ", ")
			}
			d.warnings = append(d.warnings, Reason{Path: join(path, quoteKey(k)), Rule: rule})
		case f.opts.variants != nil && kindKnown && !contains(f.opts.variants, kind) && !zero(m[k]):
			// A zero value is what a serializer writing every field of
			// the union writes: nothing was meant by it.
			d.warnings = append(d.warnings, Reason{Path: join(path, k), Rule: fmt.Sprintf("unknown property for kind %s, ignored: it belongs to kind %s", quote(kind), strings.Join(f.opts.variants, " or "))})
		}
	}
}

// zero says whether a JSON value is its type's zero: null, "", 0, false,
// an empty array or object.
func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// quoteKey is a property name as a path segment: as it is when it is a
// plain name, quoted when it holds anything a person could misread.
func quoteKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// DigestOf is the lowercase hex sha-256 of a document's bytes: the
// acceptedDigest reported.json carries for the document in force.
func DigestOf(data []byte) Sha256Digest {
	sum := sha256.Sum256(data)
	return Sha256Digest(hex.EncodeToString(sum[:]))
}
