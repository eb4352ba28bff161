package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// unknownFields are the members of one JSON object that alp has no field
// for, in the order the file had them, so they are written back as found.
type unknownFields struct {
	keys   []string
	values map[string]json.RawMessage
}

// objectKeys is, for each object of state.json alp maps to a struct (the
// file, each proposal, each chip), its keys in file order. The path of an
// object is its keys from the top joined by "\x00".
type objectKeys map[string][]string

func pathOf(keys ...string) string { return strings.Join(keys, "\x00") }

// frame is one open object or array while scanning.
type frame struct {
	object  bool
	wantKey bool
	path    []string
	key     string // the member whose value is being read
	seen    map[string]bool
}

// scanObjects walks data token by token. It refuses a key that appears
// twice in one object, naming it, where it is and its line, and returns
// the key order of the objects keepUnknown needs. A syntax error is left
// to json.Unmarshal, which has already reported it.
func scanObjects(data []byte) (objectKeys, error) {
	keys := objectKeys{}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, nil
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := stack[n-1]
			if k, ok := tok.(string); ok {
				if top.seen[k] {
					line := 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n"))
					return nil, fmt.Errorf("line %d: %q appears twice %s; keep the one that is right", line, k, where(top.path))
				}
				top.seen[k], top.wantKey, top.key = true, false, k
				p := pathOf(top.path...)
				keys[p] = append(keys[p], k)
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			var path []string
			if n := len(stack); n > 0 {
				parent := stack[n-1]
				path = append(append([]string{}, parent.path...), parent.key)
				if !parent.object {
					path[len(path)-1] = "[]"
				}
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), wantKey: true, path: path, seen: map[string]bool{}})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// where names an object by its path, for an error.
func where(path []string) string {
	switch {
	case len(path) == 0:
		return "at the top of the file"
	case len(path) == 1 && path[0] == "proposals":
		return "in proposals (the same proposal recorded twice)"
	case len(path) == 1 && path[0] == "chips":
		return "in chips (the same chip recorded twice)"
	case len(path) == 2 && path[0] == "proposals":
		return fmt.Sprintf("in proposal %q", path[1])
	case len(path) == 2 && path[0] == "chips":
		return fmt.Sprintf("in chip %q", path[1])
	}
	return "in " + strings.Join(path, ".")
}

// keepUnknown records, on s and each of its proposals and chips, the
// members of its object that no struct field takes.
func (s *State) keepUnknown(data []byte, keys objectKeys) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	s.unknown = unknownOf(reflect.TypeOf(State{}), keys[pathOf()], top)
	if raw, ok := top["network"]; ok && s.Network != nil {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err == nil {
			s.Network.unknown = unknownOf(reflect.TypeOf(Network{}), keys[pathOf("network")], fields)
		}
	}
	for _, group := range []string{"proposals", "chips"} {
		var members map[string]map[string]json.RawMessage
		if raw, ok := top[group]; ok {
			if err := json.Unmarshal(raw, &members); err != nil {
				continue // null entries are refused by Parse with a better message
			}
		}
		for name, fields := range members {
			order := keys[pathOf(group, name)]
			switch group {
			case "proposals":
				if p := s.Proposals[name]; p != nil {
					p.unknown = unknownOf(reflect.TypeOf(Proposal{}), order, fields)
				}
			case "chips":
				if c := s.Chips[name]; c != nil {
					c.unknown = unknownOf(reflect.TypeOf(Chip{}), order, fields)
				}
			}
		}
	}
	return nil
}

// unknownOf keeps, in order, the keys of fields that t has no JSON field
// for.
func unknownOf(t reflect.Type, order []string, fields map[string]json.RawMessage) unknownFields {
	known := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			known[name] = true
		}
	}
	var u unknownFields
	for _, k := range order {
		if !known[k] {
			if u.values == nil {
				u.values = map[string]json.RawMessage{}
			}
			u.keys, u.values[k] = append(u.keys, k), fields[k]
		}
	}
	return u
}

// appendUnknown adds u's members to obj, the JSON of the known fields.
func appendUnknown(obj []byte, u unknownFields) ([]byte, error) {
	if len(u.keys) == 0 {
		return obj, nil
	}
	var b bytes.Buffer
	b.Write(bytes.TrimSuffix(bytes.TrimRight(obj, " \n"), []byte("}")))
	for i, k := range u.keys {
		if i > 0 || len(obj) > 2 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(u.values[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// withUnknown is the JSON of known (a struct's fields, through a type
// without its MarshalJSON) followed by u.
func withUnknown(known any, u unknownFields) ([]byte, error) {
	b, err := json.Marshal(known)
	if err != nil {
		return nil, err
	}
	return appendUnknown(b, u)
}

// MarshalJSON writes the known fields, then the unknown ones as read.
func (s *State) MarshalJSON() ([]byte, error) {
	type known State
	return withUnknown((*known)(s), s.unknown)
}

// MarshalJSON writes the known fields, then the unknown ones as read.
func (p *Proposal) MarshalJSON() ([]byte, error) {
	type known Proposal
	return withUnknown((*known)(p), p.unknown)
}

// MarshalJSON writes the known fields, then the unknown ones as read.
func (c *Chip) MarshalJSON() ([]byte, error) {
	type known Chip
	return withUnknown((*known)(c), c.unknown)
}

// MarshalJSON writes the known fields, then the unknown ones as read.
func (n *Network) MarshalJSON() ([]byte, error) {
	type known Network
	return withUnknown((*known)(n), n.unknown)
}
