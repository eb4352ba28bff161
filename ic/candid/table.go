package candid

import (
	"fmt"

	"alpnib.dev/ic/internal/leb128"
)

// tableBuilder builds a message's type table the way the reference encoder
// does, so that our bytes match it: entries are added post-order (a
// compound type's components before the type itself), one entry per
// distinct compound type (identical entries are shared), and fields are in
// ID order (Type keeps them sorted). A type that refers to itself gets its
// index reserved at the moment the back reference is met.
type tableBuilder struct {
	entries   [][]byte
	index     map[*Type]int
	open      map[*Type]bool
	byContent map[string]int
}

func newTableBuilder() *tableBuilder {
	return &tableBuilder{index: map[*Type]int{}, open: map[*Type]bool{}, byContent: map[string]int{}}
}

// primOpcode is the negative opcode of a primitive kind.
func primOpcode(k Kind) int64 {
	if k == KindPrincipal {
		return opPrincipal
	}
	return -int64(k)
}

// ref returns the reference (table index or primitive opcode) for t,
// building table entries as needed.
func (b *tableBuilder) ref(t *Type) (int64, error) {
	t = t.Resolved()
	if t == nil {
		return 0, fmt.Errorf("candid: nil type")
	}
	if t.Kind.IsPrimitive() {
		return primOpcode(t.Kind), nil
	}
	if i, ok := b.index[t]; ok {
		return int64(i), nil
	}
	if b.open[t] {
		i := len(b.entries)
		b.entries = append(b.entries, nil)
		b.index[t] = i
		return int64(i), nil
	}
	b.open[t] = true
	entry, err := b.entry(t)
	b.open[t] = false
	if err != nil {
		return 0, err
	}
	if i, ok := b.index[t]; ok { // reserved by a back reference
		b.entries[i] = entry
		return int64(i), nil
	}
	if i, ok := b.byContent[string(entry)]; ok {
		b.index[t] = i
		return int64(i), nil
	}
	i := len(b.entries)
	b.entries = append(b.entries, entry)
	b.index[t] = i
	b.byContent[string(entry)] = i
	return int64(i), nil
}

func (b *tableBuilder) refs(ts []*Type) ([]int64, error) {
	out := make([]int64, len(ts))
	for i, t := range ts {
		r, err := b.ref(t)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func (b *tableBuilder) entry(t *Type) ([]byte, error) {
	var e []byte
	switch t.Kind {
	case KindOpt, KindVec:
		r, err := b.ref(t.Elem)
		if err != nil {
			return nil, err
		}
		op := int64(opOpt)
		if t.Kind == KindVec {
			op = opVec
		}
		e = leb128.AppendSigned(leb128.AppendSigned(e, op), r)
	case KindRecord, KindVariant:
		ts := make([]*Type, len(t.Fields))
		for i, f := range t.Fields {
			if i > 0 && t.Fields[i-1].ID >= f.ID {
				return nil, fmt.Errorf("candid: %s fields not sorted or duplicated at id %d", t.Kind, f.ID)
			}
			ts[i] = f.Type
		}
		rs, err := b.refs(ts)
		if err != nil {
			return nil, err
		}
		op := int64(opRecord)
		if t.Kind == KindVariant {
			op = opVariant
		}
		e = leb128.AppendUnsigned(leb128.AppendSigned(e, op), uint64(len(t.Fields)))
		for i, f := range t.Fields {
			e = leb128.AppendSigned(leb128.AppendUnsigned(e, uint64(f.ID)), rs[i])
		}
	case KindFunc:
		as, err := b.refs(t.Args)
		if err != nil {
			return nil, err
		}
		rs, err := b.refs(t.Results)
		if err != nil {
			return nil, err
		}
		e = leb128.AppendSigned(e, opFunc)
		e = leb128.AppendUnsigned(e, uint64(len(as)))
		for _, r := range as {
			e = leb128.AppendSigned(e, r)
		}
		e = leb128.AppendUnsigned(e, uint64(len(rs)))
		for _, r := range rs {
			e = leb128.AppendSigned(e, r)
		}
		e = leb128.AppendUnsigned(e, uint64(len(t.Modes)))
		for _, m := range t.Modes {
			e = append(e, byte(m))
		}
	case KindService:
		ts := make([]*Type, len(t.Methods))
		for i, m := range t.Methods {
			if i > 0 && t.Methods[i-1].Name >= m.Name {
				return nil, fmt.Errorf("candid: service methods not sorted or duplicated at %q", m.Name)
			}
			if mt := m.Type.Resolved(); mt == nil || mt.Kind != KindFunc {
				return nil, fmt.Errorf("candid: service method %q is not a func", m.Name)
			}
			ts[i] = m.Type
		}
		rs, err := b.refs(ts)
		if err != nil {
			return nil, err
		}
		e = leb128.AppendUnsigned(leb128.AppendSigned(e, opService), uint64(len(t.Methods)))
		for i, m := range t.Methods {
			e = leb128.AppendUnsigned(e, uint64(len(m.Name)))
			e = append(e, m.Name...)
			e = leb128.AppendSigned(e, rs[i])
		}
	default:
		return nil, fmt.Errorf("candid: cannot encode type %s", t.Kind)
	}
	return e, nil
}

// encodeHeader returns "DIDL", the type table and the argument list for
// the argument types.
func encodeHeader(args []*Type) ([]byte, error) {
	b := newTableBuilder()
	rs, err := b.refs(args)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), magic...)
	out = leb128.AppendUnsigned(out, uint64(len(b.entries)))
	for _, e := range b.entries {
		out = append(out, e...)
	}
	out = leb128.AppendUnsigned(out, uint64(len(rs)))
	for _, r := range rs {
		out = leb128.AppendSigned(out, r)
	}
	return out, nil
}
