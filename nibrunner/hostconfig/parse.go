package hostconfig

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"alpnib.dev/internal/suggest"
)

// Parse validates a config.toml's bytes whole and returns the configuration.
// The error is an *Invalid listing every reason.
func Parse(data []byte) (*Config, error) {
	var tree map[string]any
	if err := toml.Unmarshal(data, &tree); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, &Invalid{File: "config.toml", Reasons: []string{fmt.Sprintf("is not TOML: line %d, column %d: %v", row, col, de)}}
		}
		return nil, &Invalid{File: "config.toml", Reasons: []string{"is not TOML: " + err.Error()}}
	}
	v := &validator{}
	v.shape("", tree, reflect.TypeFor[Config]())
	if len(v.reasons) > 0 {
		return nil, &Invalid{File: "config.toml", Reasons: v.reasons}
	}
	var c Config
	if err := toml.Unmarshal(data, &c); err != nil {
		return nil, &Invalid{File: "config.toml", Reasons: []string{err.Error()}}
	}
	c.validate(v)
	if len(v.reasons) > 0 {
		return nil, &Invalid{File: "config.toml", Reasons: v.reasons}
	}
	return &c, nil
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

func dotted(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// optionalKey says whether a key may be absent (a setting with a default):
// its toml tag says omitempty.
func optionalKey(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return strings.Contains(opts, "omitempty")
}

// optionalSection says whether a table of type t may be absent: a pointer
// to a struct is an optional section, and so is a table holding nothing
// but optional sections ([proxy]).
func optionalSection(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tomlName(f) != "-" && !optionalSection(f.Type) && !optionalKey(f) {
			return false
		}
	}
	return true
}

// shape checks that table has exactly the keys of struct type t, each of
// the right TOML type: a missing key is refused by name, and so is an
// unknown one.
func (v *validator) shape(prefix string, table map[string]any, t reflect.Type) {
	known := map[string]bool{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := tomlName(f)
		if name == "-" {
			continue
		}
		known[name] = true
		names = append(names, name)
		key := dotted(prefix, name)
		val, present := table[name]
		ft := f.Type
		if !present {
			if !optionalSection(ft) && !optionalKey(f) {
				if isTable(ft) {
					v.fail("missing section [%s]", key)
				} else {
					v.fail("missing key %s", key)
				}
			}
			continue
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Struct:
			sub, ok := val.(map[string]any)
			if !ok {
				v.fail("%s must be a section ([%s]), not a value", key, key)
				continue
			}
			v.shape(key, sub, ft)
		case reflect.String:
			if str, ok := val.(string); !ok {
				v.fail("%s must be a string", key)
			} else if str == "" && optionalKey(f) {
				v.fail("%s is empty; leave the key out for its default, or give it a value", key)
			}
		case reflect.Int:
			if n, ok := val.(int64); !ok {
				v.fail("%s must be an integer", key)
			} else if n == 0 && optionalKey(f) {
				// Absent and 0 are one value once parsed: an explicit 0 would
				// silently be the default, which is not what it says.
				v.fail("%s is 0; leave the key out for its default, or give it a value", key)
			}
		case reflect.Float64:
			switch n := val.(type) {
			case float64:
				if n == 0 && optionalKey(f) {
					v.fail("%s is 0; leave the key out for its default, or give it a value", key)
				}
			case int64:
				if n == 0 && optionalKey(f) {
					v.fail("%s is 0; leave the key out for its default, or give it a value", key)
				}
			default:
				v.fail("%s must be a number", key)
			}
		case reflect.Bool:
			if _, ok := val.(bool); !ok {
				v.fail("%s must be true or false", key)
			}
		case reflect.Map:
			// A table of tables, one per name ([checkpoints.schedule.volumes.<id>]).
			tables, ok := val.(map[string]any)
			if !ok {
				v.fail("%s must hold sections ([%s.<name>]), not a value", key, key)
				continue
			}
			names := make([]string, 0, len(tables))
			for name := range tables {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				sub, ok := tables[name].(map[string]any)
				if !ok {
					v.fail("%s.%s must be a section ([%s.%s]), not a value", key, name, key, name)
					continue
				}
				v.shape(key+"."+name, sub, ft.Elem())
			}
		case reflect.Slice:
			list, ok := val.([]any)
			if !ok {
				v.fail("%s must be a list of strings", key)
				continue
			}
			for i, item := range list {
				if _, ok := item.(string); !ok {
					v.fail("%s[%d] must be a string", key, i)
				}
			}
		}
	}
	var unknown []string
	for name := range table {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		key := dotted(prefix, name)
		if near, ok := suggest.Nearest(name, names); ok {
			v.fail("unknown key %s: did you mean %s?", key, dotted(prefix, near))
		} else {
			v.fail("unknown key %s: the keys of %s are %s", key, tableName(prefix), strings.Join(names, ", "))
		}
	}
}

// tableName is how a message names the table at prefix.
func tableName(prefix string) string {
	if prefix == "" {
		return "the top level"
	}
	return "[" + prefix + "]"
}

func isTable(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}
