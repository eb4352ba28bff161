package nns

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// registryVectors is shared/conformance/registry.json: protobuf bytes of
// registry records encoded by protoc, and the values a decoder must read.
type registryVectors struct {
	Vectors []struct {
		Name    string         `json:"name"`
		Message string         `json:"message"`
		Hex     string         `json:"hex"`
		Expect  map[string]any `json:"expect"`
	} `json:"vectors"`
}

// record is what each view in records.go is.
type record interface {
	Unmarshal([]byte) error
	Marshal() []byte
}

// views are the record types alp reads, by upstream message name; each must
// re-encode a vector without losing a field.
var views = map[string]func() record{
	"registry.node.v1.NodeRecord":                        func() record { return &NodeRecordPB{} },
	"registry.node_operator.v1.NodeOperatorRecord":       func() record { return &NodeOperatorRecordPB{} },
	"registry.subnet.v1.SubnetRecord":                    func() record { return &SubnetRecordPB{} },
	"registry.subnet.v1.SubnetListRecord":                func() record { return &SubnetListRecordPB{} },
	"registry.dc.v1.DataCenterRecord":                    func() record { return &DataCenterRecordPB{} },
	"registry.replica_version.v1.ReplicaVersionRecord":   func() record { return &ReplicaVersionRecordPB{} },
	"registry.replica_version.v1.BlessedReplicaVersions": func() record { return &BlessedReplicaVersionsPB{} },
}

// TestEveryRegistryVectorDecodesToItsExpectedValues runs the vendored copy
// of the shared registry vectors, and the file $REGISTRY_VECTORS names when
// set, and prints one "registry vectors: N passed, M failed" line.
func TestEveryRegistryVectorDecodesToItsExpectedValues(t *testing.T) {
	files := []string{"testdata/registry.json"}
	if extra := os.Getenv("REGISTRY_VECTORS"); extra != "" {
		files = append(files, extra)
	}
	passed, failed := 0, 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var f registryVectors
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(f.Vectors) == 0 {
			t.Fatalf("%s has no vectors", file)
		}
		for _, v := range f.Vectors {
			if problems := checkRegistryVector(v.Message, v.Hex, v.Expect); len(problems) > 0 {
				failed++
				t.Errorf("%s %s:\n  %s", file, v.Name, strings.Join(problems, "\n  "))
			} else {
				passed++
			}
		}
	}
	fmt.Printf("registry vectors: %d passed, %d failed\n", passed, failed)
}

func checkRegistryVector(message, hexBytes string, expect map[string]any) []string {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(message))
	if err != nil {
		return []string{fmt.Sprintf("no message %s: %v", message, err)}
	}
	raw, err := hex.DecodeString(hexBytes)
	if err != nil {
		return []string{"bad hex: " + err.Error()}
	}
	m := mt.New()
	if err := proto.Unmarshal(raw, m.Interface()); err != nil {
		return []string{"decode: " + err.Error()}
	}
	var problems []string
	keys := make([]string, 0, len(expect))
	for k := range expect {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p := checkExpectedKey(m, k, expect[k]); p != "" {
			problems = append(problems, p)
		}
	}
	// The view alp reads must give back every field when it re-encodes.
	if newView, ok := views[message]; ok {
		view := newView()
		if err := view.Unmarshal(raw); err != nil {
			problems = append(problems, "view decode: "+err.Error())
		} else {
			again := mt.New()
			if err := proto.Unmarshal(view.Marshal(), again.Interface()); err != nil || !proto.Equal(m.Interface(), again.Interface()) {
				problems = append(problems, fmt.Sprintf("the view re-encodes to a different record (%v)", err))
			}
		}
	}
	return problems
}

// checkExpectedKey compares one `expect` entry: a dotted key walks into
// nested messages, a *_text key is a principal in textual form, and null
// means absent.
func checkExpectedKey(m protoreflect.Message, key string, want any) string {
	path := strings.Split(key, ".")
	asText := false
	for i, name := range path {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil && i == len(path)-1 && strings.HasSuffix(name, "_text") {
			fd, asText = m.Descriptor().Fields().ByName(protoreflect.Name(strings.TrimSuffix(name, "_text"))), true
		}
		if fd == nil && i == len(path)-1 && name == "present" {
			return compare(key, m.IsValid(), want)
		}
		if fd == nil {
			return fmt.Sprintf("%s: no field %q in %s", key, name, m.Descriptor().FullName())
		}
		if i < len(path)-1 {
			if !m.Has(fd) {
				if want == nil {
					return ""
				}
				return fmt.Sprintf("%s: %s is absent", key, name)
			}
			m = m.Get(fd).Message()
			continue
		}
		if want == nil {
			if fd.HasPresence() && m.Has(fd) {
				return fmt.Sprintf("%s: want absent, got %v", key, m.Get(fd))
			}
			return ""
		}
		got := plain(fd, m.Get(fd), asText)
		if fd.HasPresence() && !m.Has(fd) && !(fd.IsList() || fd.IsMap()) {
			got = nil
		}
		return compare(key, got, want)
	}
	return ""
}

// plain turns a protobuf value into what the JSON expects: bytes as hex (or
// principal text), enums as numbers, lists and maps element by element, and
// a one-field wrapper message (types.v1.PrincipalId) as its field.
func plain(fd protoreflect.FieldDescriptor, v protoreflect.Value, asText bool) any {
	switch {
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			out[i] = scalar(fd, l.Get(i), asText)
		}
		return out
	case fd.IsMap():
		out := map[string]any{}
		v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			out[k.String()] = scalar(fd.MapValue(), v, false)
			return true
		})
		return out
	}
	return scalar(fd, v, asText)
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value, asText bool) any {
	switch fd.Kind() {
	case protoreflect.BytesKind:
		if asText {
			p, err := principal.FromBytes(v.Bytes())
			if err != nil {
				return "invalid principal: " + err.Error()
			}
			return p.String()
		}
		return hex.EncodeToString(v.Bytes())
	case protoreflect.EnumKind:
		return float64(v.Enum())
	case protoreflect.MessageKind:
		msg := v.Message()
		if fs := msg.Descriptor().Fields(); fs.Len() == 1 {
			return scalar(fs.Get(0), msg.Get(fs.Get(0)), asText)
		}
		return msg.Interface()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return float64(v.Uint())
	default:
		return float64(v.Int())
	}
}

// compare matches JSON-decoded want against got; floats to 4 decimals (the
// records' coordinates are 32-bit).
func compare(key string, got, want any) string {
	if g, ok := got.(float64); ok {
		if w, ok := want.(float64); ok && math.Abs(g-w) < 1e-4 {
			return ""
		}
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) == string(wj) {
		return ""
	}
	return fmt.Sprintf("%s: got %s, want %s", key, gj, wj)
}
