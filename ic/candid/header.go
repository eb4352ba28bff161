package candid

import (
	"unicode/utf8"
)

// Type-table opcodes.
const (
	opOpt       = -18
	opVec       = -19
	opRecord    = -20
	opVariant   = -21
	opFunc      = -22
	opService   = -23
	opPrincipal = -24
)

var magic = []byte("DIDL")

// header is a parsed message header: the type table and the argument types.
// Its types are the wire types the values are encoded at.
type header struct {
	table []*Type
	args  []*Type
	end   int // offset of the first value
}

// parseHeader reads "DIDL", the type table and the argument list. Every
// count is checked against the bytes left before anything is allocated: a
// table entry or a reference takes at least one byte.
func parseHeader(data []byte) (*header, error) {
	if len(data) < 4 || string(data[:4]) != "DIDL" {
		return nil, errAt(0, ErrFormat, "message does not start with the magic bytes DIDL")
	}
	r := &reader{data: data, pos: 4}
	n, err := r.length("type table length", 1)
	if err != nil {
		return nil, err
	}
	h := &header{table: make([]*Type, n)}
	nodes := make([]Type, n)
	for i := range h.table {
		h.table[i] = &nodes[i]
	}
	for i := 0; i < n; i++ {
		if err := h.parseEntry(r, h.table[i]); err != nil {
			return nil, err
		}
	}
	// Service methods must be funcs; known only once the table is read.
	for _, t := range h.table {
		if t.Kind != KindService {
			continue
		}
		for _, m := range t.Methods {
			if m.Type.Kind != KindFunc {
				return nil, errAt(r.pos, ErrFormat, "service method %q has type %s, not func", m.Name, m.Type.Kind)
			}
		}
	}
	na, err := r.length("argument count", 1)
	if err != nil {
		return nil, err
	}
	h.args = make([]*Type, na)
	for i := range h.args {
		if h.args[i], err = h.ref(r, "argument type"); err != nil {
			return nil, err
		}
	}
	h.end = r.pos
	return h, nil
}

// ref reads a type reference: an index into the table or a primitive opcode.
func (h *header) ref(r *reader, what string) (*Type, error) {
	start := r.pos
	v, err := r.sleb(what)
	if err != nil {
		return nil, err
	}
	if v >= 0 {
		if v >= int64(len(h.table)) {
			return nil, errAt(start, ErrFormat, "%s refers to table entry %d of %d", what, v, len(h.table))
		}
		return h.table[v], nil
	}
	if v >= -17 {
		return primitives[Kind(-v)], nil
	}
	if v == opPrincipal {
		return primitives[KindPrincipal], nil
	}
	return nil, errAt(start, ErrFormat, "%s has opcode %d, which is not a primitive type", what, v)
}

func (h *header) parseEntry(r *reader, t *Type) error {
	start := r.pos
	op, err := r.sleb("type opcode")
	if err != nil {
		return err
	}
	switch {
	case op == opOpt || op == opVec:
		t.Kind = KindOpt
		if op == opVec {
			t.Kind = KindVec
		}
		t.Elem, err = h.ref(r, t.Kind.String()+" element type")
		return err
	case op == opRecord || op == opVariant:
		t.Kind = KindRecord
		if op == opVariant {
			t.Kind = KindVariant
		}
		// A field takes at least two bytes (id and type).
		nf, err := r.length("field count", 2)
		if err != nil {
			return err
		}
		t.Fields = make([]Field, nf)
		for i := range t.Fields {
			idAt := r.pos
			id, err := r.leb("field id")
			if err != nil {
				return err
			}
			if id > 0xffffffff {
				return errAt(idAt, ErrFormat, "field id %d is larger than 32 bits", id)
			}
			if i > 0 && uint32(id) <= t.Fields[i-1].ID {
				return errAt(idAt, ErrFormat, "%s field ids are not strictly increasing (%d after %d)", t.Kind, id, t.Fields[i-1].ID)
			}
			ft, err := h.ref(r, "field type")
			if err != nil {
				return err
			}
			t.Fields[i] = Field{ID: uint32(id), Type: ft}
		}
		return nil
	case op == opFunc:
		t.Kind = KindFunc
		if t.Args, err = h.refList(r, "func argument"); err != nil {
			return err
		}
		if t.Results, err = h.refList(r, "func result"); err != nil {
			return err
		}
		nm, err := r.length("annotation count", 1)
		if err != nil {
			return err
		}
		if nm > 0 {
			t.Modes = make([]FuncMode, nm)
		}
		for i := range t.Modes {
			c, err := r.byte("annotation")
			if err != nil {
				return err
			}
			if c < 1 || c > 3 {
				return errAt(r.pos-1, ErrFormat, "unknown func annotation %#x", c)
			}
			t.Modes[i] = FuncMode(c)
		}
		return nil
	case op == opService:
		t.Kind = KindService
		nm, err := r.length("method count", 2)
		if err != nil {
			return err
		}
		t.Methods = make([]Method, nm)
		for i := range t.Methods {
			at := r.pos
			nl, err := r.length("method name length", 1)
			if err != nil {
				return err
			}
			name := r.data[r.pos : r.pos+nl]
			r.pos += nl
			if !utf8.Valid(name) {
				return errAt(at, ErrFormat, "method name is not valid UTF-8")
			}
			if i > 0 && string(name) <= t.Methods[i-1].Name {
				return errAt(at, ErrFormat, "service methods are not sorted or repeat (%q after %q)", name, t.Methods[i-1].Name)
			}
			mt, err := h.ref(r, "method type")
			if err != nil {
				return err
			}
			t.Methods[i] = Method{Name: string(name), Type: mt}
		}
		return nil
	case op < opPrincipal:
		// A type from a future Candid version: its length, then bytes we skip.
		t.Kind = KindFuture
		t.Opcode = op
		nb, err := r.length("future type length", 1)
		if err != nil {
			return err
		}
		r.pos += nb
		return nil
	case op >= 0:
		return errAt(start, ErrFormat, "type table entry is a reference to entry %d, not a type", op)
	default:
		return errAt(start, ErrFormat, "type table entry has primitive opcode %d", op)
	}
}

func (h *header) refList(r *reader, what string) ([]*Type, error) {
	n, err := r.length(what+" count", 1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	ts := make([]*Type, n)
	for i := range ts {
		if ts[i], err = h.ref(r, what+" type"); err != nil {
			return nil, err
		}
	}
	return ts, nil
}
