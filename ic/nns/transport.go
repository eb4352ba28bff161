package nns

import "google.golang.org/protobuf/encoding/protowire"

// The registry's get_value takes and returns protobuf, not Candid
// (ic_registry_transport.pb.v1 in rs/registry/transport).

// RegistryErrorKeyNotPresent is RegistryError.Code KEY_NOT_PRESENT.
const RegistryErrorKeyNotPresent int32 = 1

// RegistryGetValueRequest asks for key at Version (nil: the latest).
type RegistryGetValueRequest struct {
	Version *uint64 // 1, google.protobuf.UInt64Value
	Key     []byte  // 2
}

// RegistryError is the registry transport error.
type RegistryError struct {
	Code   int32  // 1
	Reason string // 2
	Key    []byte // 3
}

// marshal encodes the error as the message embedded in both responses.
func (re *RegistryError) marshal() []byte {
	var w enc
	w.varint(1, uint64(re.Code))
	w.str(2, re.Reason)
	w.bytes(3, re.Key)
	return w.b
}

// unmarshalRegistryError decodes the embedded error message.
func unmarshalRegistryError(b []byte) (*RegistryError, error) {
	re := &RegistryError{}
	err := fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			x, l, err := getVarint(t, b)
			re.Code = int32(x)
			return l, err
		case 2:
			x, l, err := getBytes(t, b)
			re.Reason = string(x)
			return l, err
		case 3:
			x, l, err := getBytes(t, b)
			re.Key = x
			return l, err
		}
		return -1, nil
	})
	return re, err
}

// RegistryGetValueResponse carries the value and the version that wrote
// it, or Error.
type RegistryGetValueResponse struct {
	Error   *RegistryError // 1
	Version uint64         // 2
	Value   []byte         // 3
}

// Marshal encodes the request.
func (r *RegistryGetValueRequest) Marshal() []byte {
	var e enc
	if r.Version != nil {
		var w enc
		w.varint(1, *r.Version)
		e.bytesAlways(1, w.b)
	}
	e.bytes(2, r.Key)
	return e.b
}

// Unmarshal decodes the request.
func (r *RegistryGetValueRequest) Unmarshal(b []byte) error {
	*r = RegistryGetValueRequest{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			var ver uint64
			err = fields(v, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
				if n == 1 {
					x, l, err := getVarint(t, b)
					ver = x
					return l, err
				}
				return -1, nil
			})
			r.Version = &ver
			return l, err
		case 2:
			v, l, err := getBytes(t, b)
			r.Key = v
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the response.
func (r *RegistryGetValueResponse) Marshal() []byte {
	var e enc
	if r.Error != nil {
		e.bytesAlways(1, r.Error.marshal())
	}
	e.varint(2, r.Version)
	e.bytes(3, r.Value)
	return e.b
}

// Unmarshal decodes the response.
func (r *RegistryGetValueResponse) Unmarshal(b []byte) error {
	*r = RegistryGetValueResponse{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			r.Error, err = unmarshalRegistryError(v)
			return l, err
		case 2:
			v, l, err := getVarint(t, b)
			r.Version = v
			return l, err
		case 3:
			v, l, err := getBytes(t, b)
			r.Value = v
			return l, err
		}
		return -1, nil
	})
}

// RegistryValue is one change of a key: its value at Version, or a
// deletion.
type RegistryValue struct {
	Value          []byte // 1
	Version        uint64 // 2
	DeletionMarker bool   // 3
}

// RegistryDelta is the changes of one key.
type RegistryDelta struct {
	Key    []byte          // 1
	Values []RegistryValue // 2
}

// RegistryGetChangesSinceResponse answers get_changes_since: every change
// after the requested version, by key, and the latest version.
type RegistryGetChangesSinceResponse struct {
	Error   *RegistryError  // 1
	Version uint64          // 2
	Deltas  []RegistryDelta // 3
}

// MarshalGetChangesSinceRequest encodes RegistryGetChangesSinceRequest.
func MarshalGetChangesSinceRequest(version uint64) []byte {
	var e enc
	e.varint(1, version)
	return e.b
}

// UnmarshalGetChangesSinceRequest decodes RegistryGetChangesSinceRequest.
func UnmarshalGetChangesSinceRequest(b []byte) (uint64, error) {
	var v uint64
	err := fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		if n == 1 {
			x, l, err := getVarint(t, b)
			v = x
			return l, err
		}
		return -1, nil
	})
	return v, err
}

// Marshal encodes the response.
func (r *RegistryGetChangesSinceResponse) Marshal() []byte {
	var e enc
	if r.Error != nil {
		e.bytesAlways(1, r.Error.marshal())
	}
	e.varint(2, r.Version)
	for _, d := range r.Deltas {
		var de enc
		de.bytes(1, d.Key)
		for _, v := range d.Values {
			var ve enc
			ve.bytes(1, v.Value)
			ve.varint(2, v.Version)
			ve.boolean(3, v.DeletionMarker)
			de.bytesAlways(2, ve.b)
		}
		e.bytesAlways(3, de.b)
	}
	return e.b
}

// Unmarshal decodes the response.
func (r *RegistryGetChangesSinceResponse) Unmarshal(b []byte) error {
	*r = RegistryGetChangesSinceResponse{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			r.Error, err = unmarshalRegistryError(v)
			return l, err
		case 2:
			v, l, err := getVarint(t, b)
			r.Version = v
			return l, err
		case 3:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			var d RegistryDelta
			err = d.unmarshal(v)
			r.Deltas = append(r.Deltas, d)
			return l, err
		}
		return -1, nil
	})
}

// unmarshal decodes one key's changes.
func (d *RegistryDelta) unmarshal(b []byte) error {
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			x, l, err := getBytes(t, b)
			d.Key = x
			return l, err
		case 2:
			x, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			var rv RegistryValue
			err = rv.unmarshal(x)
			d.Values = append(d.Values, rv)
			return l, err
		}
		return -1, nil
	})
}

// unmarshal decodes one change of a key.
func (rv *RegistryValue) unmarshal(b []byte) error {
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			y, l, err := getBytes(t, b)
			rv.Value = y
			return l, err
		case 2:
			y, l, err := getVarint(t, b)
			rv.Version = y
			return l, err
		case 3:
			y, l, err := getVarint(t, b)
			rv.DeletionMarker = y != 0
			return l, err
		}
		return -1, nil
	})
}
