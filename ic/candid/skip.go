package candid

// skipValue reads past one value of wire type w, validating it as fully as
// decoding would (UTF-8, bool bytes, opt tags, variant indexes, lengths),
// while spending the budget and tracking depth like decoding. d supplies
// the vec length checks.
func skipValue(r *reader, w *Type, d *valueDecoder) error {
	w = w.Resolved()
	if err := r.spend(1); err != nil {
		return err
	}
	if err := r.enter(); err != nil {
		return err
	}
	defer func() { r.depth-- }()
	var err error
	switch w.Kind {
	case KindNull, KindReserved:
	case KindEmpty:
		return errAt(r.pos, ErrFormat, "there is no value of type empty")
	case KindBool:
		_, err = r.boolean()
	case KindNat, KindInt:
		_, err = r.lebSpan(w.Kind.String())
	case KindText:
		_, err = r.text("text")
	case KindPrincipal, KindService:
		_, err = r.principalRef()
	case KindFunc:
		_, _, err = r.funcRef()
	case KindOpt:
		var c byte
		if c, err = r.byte("opt tag"); err != nil {
			return err
		}
		switch c {
		case 0:
		case 1:
			return skipValue(r, w.Elem, d)
		default:
			return errAt(r.pos-1, ErrFormat, "opt tag is %#x, not 0 or 1", c)
		}
	case KindVec:
		n, err := d.vecLen(w.Elem, 1)
		if err != nil {
			return err
		}
		el := w.Elem.Resolved()
		if fs := fixedSize(el.Kind); fs > 0 {
			_, err = r.take(uint64(n)*uint64(fs), "vec")
			return err
		}
		for i := 0; i < n; i++ {
			if err := skipValue(r, el, d); err != nil {
				return err
			}
		}
	case KindRecord:
		for _, f := range w.Fields {
			if err := skipValue(r, f.Type, d); err != nil {
				return err
			}
		}
	case KindVariant:
		start := r.pos
		idx, err := r.leb("variant index")
		if err != nil {
			return err
		}
		if idx >= uint64(len(w.Fields)) {
			return errAt(start, ErrFormat, "variant index %d out of range of %d cases", idx, len(w.Fields))
		}
		return skipValue(r, w.Fields[idx].Type, d)
	case KindFuture:
		n, err := r.leb("future value length")
		if err != nil {
			return err
		}
		if _, err := r.leb("future value reference count"); err != nil {
			return err
		}
		_, err = r.take(n, "future value")
		return err
	default:
		if fs := fixedSize(w.Kind); fs > 0 {
			_, err = r.fixed(fs, w.Kind.String())
		} else {
			err = errAt(r.pos, ErrFormat, "cannot skip a value of type %s", w.Kind)
		}
	}
	return err
}
