package candid

// IsSubtype reports whether every value of type t1 can be read as type t2
// under Candid's subtyping rules (t1 <: t2). It is coinductive, so recursive
// types are handled: a pair already being compared is assumed to hold.
//
// It follows the current specification: every type is a subtype of any opt
// type (a value that does not fit decodes as null), reserved is a supertype
// of everything, empty a subtype of everything, nat <: int, and a service
// reference is also a principal.
func IsSubtype(t1, t2 *Type) bool {
	s := subtyper{assumed: map[[2]*Type]bool{}}
	return s.sub(t1, t2)
}

type subtyper struct {
	assumed map[[2]*Type]bool
}

func (s *subtyper) sub(t1, t2 *Type) bool {
	t1, t2 = t1.Resolved(), t2.Resolved()
	if t1 == nil || t2 == nil {
		return false
	}
	if t2.Kind == KindReserved || t1.Kind == KindEmpty || t2.Kind == KindOpt {
		return true
	}
	key := [2]*Type{t1, t2}
	if v, ok := s.assumed[key]; ok {
		return v
	}
	s.assumed[key] = true
	ok := s.subNew(t1, t2)
	if !ok {
		s.assumed[key] = false
	}
	return ok
}

func (s *subtyper) subNew(t1, t2 *Type) bool {
	switch t2.Kind {
	case KindNull, KindBool, KindNat, KindNat8, KindNat16, KindNat32, KindNat64,
		KindInt8, KindInt16, KindInt32, KindInt64, KindFloat32, KindFloat64, KindText:
		return t1.Kind == t2.Kind
	case KindInt:
		return t1.Kind == KindInt || t1.Kind == KindNat
	case KindPrincipal:
		return t1.Kind == KindPrincipal || t1.Kind == KindService
	case KindVec:
		return t1.Kind == KindVec && s.sub(t1.Elem, t2.Elem)
	case KindRecord:
		if t1.Kind != KindRecord {
			return false
		}
		for _, f2 := range t2.Fields {
			if f1, ok := findField(t1.Fields, f2.ID); ok {
				if !s.sub(f1.Type, f2.Type) {
					return false
				}
			} else if !isOptional(f2.Type) {
				return false
			}
		}
		return true
	case KindVariant:
		if t1.Kind != KindVariant {
			return false
		}
		for _, f1 := range t1.Fields {
			f2, ok := findField(t2.Fields, f1.ID)
			if !ok || !s.sub(f1.Type, f2.Type) {
				return false
			}
		}
		return true
	case KindFunc:
		if t1.Kind != KindFunc || !sameModes(t1.Modes, t2.Modes) {
			return false
		}
		return s.tuple(t2.Args, t1.Args) && s.tuple(t1.Results, t2.Results)
	case KindService:
		if t1.Kind != KindService {
			return false
		}
		for _, m2 := range t2.Methods {
			m1, ok := findMethod(t1.Methods, m2.Name)
			if !ok || !s.sub(m1.Type, m2.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// tuple is the subtyping of argument sequences: extra values in ts1 are
// ignored, and missing ones must be optional in ts2.
func (s *subtyper) tuple(ts1, ts2 []*Type) bool {
	for i, t2 := range ts2 {
		if i < len(ts1) {
			if !s.sub(ts1[i], t2) {
				return false
			}
		} else if !isOptional(t2) {
			return false
		}
	}
	return true
}

// isOptional reports whether a missing field or argument of type t reads as
// null (t is opt, null or reserved).
func isOptional(t *Type) bool {
	t = t.Resolved()
	return t != nil && (t.Kind == KindOpt || t.Kind == KindNull || t.Kind == KindReserved)
}

// missingValue is the value of an absent optional field or argument.
func missingValue(t *Type) (Value, bool) {
	switch t.Resolved().Kind {
	case KindOpt:
		return Value{Kind: KindOpt}, true
	case KindNull:
		return Value{Kind: KindNull}, true
	case KindReserved:
		return Value{Kind: KindReserved}, true
	}
	return Value{}, false
}

func sameModes(a, b []FuncMode) bool {
	var ma, mb [4]bool
	for _, m := range a {
		if m < 4 {
			ma[m] = true
		}
	}
	for _, m := range b {
		if m < 4 {
			mb[m] = true
		}
	}
	return ma == mb
}

func findField(fs []Field, id uint32) (Field, bool) {
	lo, hi := 0, len(fs)
	for lo < hi {
		m := (lo + hi) / 2
		if fs[m].ID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(fs) && fs[lo].ID == id {
		return fs[lo], true
	}
	return Field{}, false
}

func findMethod(ms []Method, name string) (Method, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Method{}, false
}
