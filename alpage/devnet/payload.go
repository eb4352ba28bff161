package devnet

import (
	"encoding/hex"
	"reflect"
	"strings"

	"alpnib.dev/alpage/kinds"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// PayloadJSON decodes an ExecuteNnsFunction payload as the registry method
// the function names would, and renders it the way the dashboard shows
// payloads: a JSON object keyed by the Candid field names. It returns nil
// for a function it does not know or a payload that does not decode.
func PayloadJSON(fn nns.NnsFunction, payload []byte) any {
	k := kinds.OfFunction(fn)
	if k == nil {
		return nil
	}
	c, _ := k.Claim(&nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: payload}})
	if c == nil {
		return nil
	}
	return candidJSON(reflect.ValueOf(c.Value))
}

var (
	principalType = reflect.TypeOf(principal.Principal{})
	oneOfType     = reflect.TypeOf(candid.OneOf{})
)

// candidJSON renders a Go value of a Candid-tagged type as plain JSON
// values: records as objects by Candid name, variants as {case: value},
// null opts as null, principals as text and blobs as hex.
func candidJSON(v reflect.Value) any {
	switch {
	case v.Type() == principalType:
		return v.Interface().(principal.Principal).String()
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return candidJSON(v.Elem())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		return hex.EncodeToString(v.Bytes())
	case v.Kind() == reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = candidJSON(v.Index(i))
		}
		return out
	case v.Kind() == reflect.Struct:
		variant := false
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Anonymous && f.Type == oneOfType {
				variant = true
				continue
			}
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("candid"), ",")
			if name == "" {
				name = f.Name
			}
			if variant {
				if v.Field(i).IsNil() {
					continue
				}
				if v.Field(i).Elem().Kind() == reflect.Struct && v.Field(i).Elem().NumField() == 0 {
					out[name] = nil
					continue
				}
			}
			out[name] = candidJSON(v.Field(i))
		}
		return out
	}
	return v.Interface()
}
