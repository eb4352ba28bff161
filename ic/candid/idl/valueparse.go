package idl

// Parsing of Candid text values (the "textual representation") into the
// untyped tree; values.go gives them a meaning at an expected type.

// args reads ( <annval>,* ).
func (p *parser) args() ([]valueExpr, error) {
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	var vs []valueExpr
	for !p.isPunct(")") {
		v, err := p.annValue()
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
		if !p.isPunct(")") {
			if _, err := p.expect(","); err != nil {
				return nil, err
			}
		}
	}
	p.take()
	return vs, nil
}

// annValue reads <val> (: <datatype>)?.
func (p *parser) annValue() (valueExpr, error) {
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.isPunct(":") {
		c := p.take()
		t, err := p.dataType()
		if err != nil {
			return nil, err
		}
		return &vAnnot{pos: c.pos, v: v, typ: t}, nil
	}
	return v, nil
}

// value reads <val>.
func (p *parser) value() (valueExpr, error) {
	t := p.peek()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	switch t.kind {
	case tNum:
		p.take()
		return &vNum{pos: t.pos, raw: t.text}, nil
	case tText:
		p.take()
		return &vText{pos: t.pos, bytes: t.bytes}, nil
	case tPunct:
		if t.text == "(" {
			p.take()
			v, err := p.annValue()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(")"); err != nil {
				return nil, err
			}
			return v, nil
		}
		return nil, errorf(t.pos, "expected a value, found %s", t.describe())
	case tIdent:
		p.take()
		switch t.text {
		case "true", "false":
			return &vBool{pos: t.pos, v: t.text == "true"}, nil
		case "null":
			return &vNull{pos: t.pos}, nil
		case "opt":
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			return &vOpt{pos: t.pos, v: v}, nil
		case "vec":
			return p.vecValue(t.pos)
		case "blob":
			b := p.peek()
			if b.kind != tText {
				return nil, errorf(b.pos, "blob needs a text literal, found %s", b.describe())
			}
			p.take()
			return &vBlob{pos: t.pos, bytes: b.bytes}, nil
		case "record":
			fs, err := p.fieldValues(true)
			if err != nil {
				return nil, err
			}
			return &vRecord{pos: t.pos, fields: fs}, nil
		case "variant":
			fs, err := p.fieldValues(false)
			if err != nil {
				return nil, err
			}
			if len(fs) != 1 {
				return nil, errorf(t.pos, "a variant value has exactly one field, found %d", len(fs))
			}
			return &vVariant{pos: t.pos, field: fs[0]}, nil
		case "principal", "service":
			_, s, err := p.text()
			if err != nil {
				return nil, err
			}
			if t.text == "principal" {
				return &vPrincipal{pos: t.pos, text: s}, nil
			}
			return &vService{pos: t.pos, text: s}, nil
		case "func":
			_, s, err := p.text()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect("."); err != nil {
				return nil, err
			}
			_, m, err := p.name()
			if err != nil {
				return nil, err
			}
			return &vFunc{pos: t.pos, text: s, method: m}, nil
		}
		return nil, errorf(t.pos, "expected a value, found %q", t.text)
	}
	return nil, errorf(t.pos, "expected a value, found %s", t.describe())
}

func (p *parser) vecValue(pos Pos) (valueExpr, error) {
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	v := &vVec{pos: pos}
	for !p.isPunct("}") {
		e, err := p.annValue()
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
		if !p.isPunct("}") {
			if _, err := p.expect(";"); err != nil {
				return nil, err
			}
		}
	}
	p.take()
	return v, nil
}

// fieldValues reads { <fieldval>;* } with the same shorthands as types: in a
// record a bare value takes the next id; in a variant a bare label means null.
func (p *parser) fieldValues(record bool) ([]vField, error) {
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	var fs []vField
	next := uint32(0)
	for !p.isPunct("}") {
		t := p.peek()
		f := vField{pos: t.pos}
		labelled := false
		if t.kind == tNum || t.kind == tText || (t.kind == tIdent && !keywords[t.text]) {
			after := p.peekAt(1)
			if after.kind == tPunct && after.text == "=" {
				l, err := p.label()
				if err != nil {
					return nil, err
				}
				p.take()
				v, err := p.annValue()
				if err != nil {
					return nil, err
				}
				f.label, f.v, labelled = l, v, true
			} else if !record {
				l, err := p.label()
				if err != nil {
					return nil, err
				}
				f.label, f.v, labelled = l, &vNull{pos: t.pos}, true
			}
		}
		if !labelled {
			if !record {
				return nil, errorf(t.pos, "a variant field needs a label")
			}
			v, err := p.annValue()
			if err != nil {
				return nil, err
			}
			f.label, f.v = label{id: next, num: true}, v
		}
		next = f.label.id + 1
		fs = append(fs, f)
		if !p.isPunct("}") {
			if _, err := p.expect(";"); err != nil {
				return nil, err
			}
		}
	}
	p.take()
	if err := uniqueLabels(len(fs), func(i int) (label, Pos) { return fs[i].label, fs[i].pos }); err != nil {
		return nil, err
	}
	return fs, nil
}

// test reads one assertion of the .test.did grammar.
func (p *parser) test() (testAST, error) {
	kw := p.take()
	t := testAST{pos: kw.pos}
	in, err := p.testInput()
	if err != nil {
		return t, err
	}
	t.left = in
	op := p.peek()
	switch {
	case p.isPunct(":"):
		t.kind = testAccept
		p.take()
	case p.isPunct("!:"):
		t.kind = testReject
		p.take()
	case p.isPunct("==") || p.isPunct("!="):
		t.kind = testEqual
		if op.text == "!=" {
			t.kind = testNotEqual
		}
		p.take()
		if t.right, err = p.testInput(); err != nil {
			return t, err
		}
		if _, err := p.expect(":"); err != nil {
			return t, err
		}
	default:
		return t, errorf(op.pos, "expected :, !:, == or !=, found %s", op.describe())
	}
	if t.types, err = p.tupleType(); err != nil {
		return t, err
	}
	if p.peek().kind == tText {
		_, d, err := p.text()
		if err != nil {
			return t, err
		}
		t.desc = d
	}
	return t, nil
}

func (p *parser) testInput() (testInput, error) {
	t := p.peek()
	in := testInput{pos: t.pos}
	if p.isWord("blob") {
		p.take()
		in.blob = true
		t = p.peek()
	}
	if t.kind != tText {
		return in, errorf(t.pos, "expected a text literal, found %s", t.describe())
	}
	p.take()
	in.bytes = t.bytes
	return in, nil
}
