package candid

import (
	"math/big"
	"unicode/utf8"

	"alpnib.dev/ic/internal/leb128"
)

// reader walks a message. Every read checks the bytes actually present
// first, so no length read from the input is trusted before that check.
type reader struct {
	data   []byte
	pos    int
	budget int
	depth  int
}

func newReader(data []byte, pos int) *reader {
	return &reader{data: data, pos: pos, budget: BaseCost + CostPerByte*len(data)}
}

func (r *reader) remaining() int { return len(r.data) - r.pos }

func (r *reader) truncated(what string) error {
	return errAt(r.pos, ErrTruncated, "message ends inside %s", what)
}

// spend charges n units of the message's work budget.
func (r *reader) spend(n int) error {
	r.budget -= n
	if r.budget < 0 {
		return errAt(r.pos, ErrBudget, "decoding would cost more than the message's budget of %d units", BaseCost+CostPerByte*len(r.data))
	}
	return nil
}

func (r *reader) enter() error {
	r.depth++
	if r.depth > MaxDepth {
		return errAt(r.pos, ErrTooDeep, "values nest deeper than %d levels", MaxDepth)
	}
	return nil
}

func (r *reader) byte(what string) (byte, error) {
	if r.pos >= len(r.data) {
		return 0, r.truncated(what)
	}
	c := r.data[r.pos]
	r.pos++
	return c, nil
}

// take returns the next n bytes (aliasing the message).
func (r *reader) take(n uint64, what string) ([]byte, error) {
	if n > uint64(r.remaining()) {
		return nil, errAt(r.pos, ErrTruncated, "%s of %d bytes overshoots the %d bytes left", what, n, r.remaining())
	}
	b := r.data[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// leb reads an unsigned LEB128 that must fit in 64 bits.
func (r *reader) leb(what string) (uint64, error) {
	var v uint64
	start := r.pos
	for shift := uint(0); ; shift += 7 {
		if r.pos >= len(r.data) {
			return 0, r.truncated(what)
		}
		c := r.data[r.pos]
		r.pos++
		if shift == 63 && c > 1 {
			return 0, errAt(start, ErrFormat, "%s does not fit in 64 bits", what)
		}
		if shift > 63 {
			if c&0x7f != 0 {
				return 0, errAt(start, ErrFormat, "%s does not fit in 64 bits", what)
			}
		} else {
			v |= uint64(c&0x7f) << shift
		}
		if c < 0x80 {
			return v, nil
		}
	}
}

// length reads a count or byte length of items that take at least per
// bytes each, and checks that the bytes left after it can hold them.
func (r *reader) length(what string, per int) (int, error) {
	start := r.pos
	n, err := r.leb(what)
	if err != nil {
		return 0, err
	}
	if max := r.remaining() / per; n > uint64(max) {
		return 0, errAt(start, ErrTruncated, "%s %d exceeds the %d that the remaining bytes can hold", what, n, max)
	}
	return int(n), nil
}

// vecLen reads a vec length and checks it against the bytes left when the
// elements take at least minSize bytes each, and against the budget
// (perElem units each) when they take none.
func (r *reader) vecLen(minSize, perElem int) (int, error) {
	start := r.pos
	n, err := r.leb("vec length")
	if err != nil {
		return 0, err
	}
	if minSize > 0 {
		if n > uint64(r.remaining()/minSize) {
			return 0, errAt(start, ErrTruncated, "vec of %d elements of at least %d bytes overshoots the %d bytes left", n, minSize, r.remaining())
		}
	} else if n > uint64(max(r.budget, 0)/perElem) {
		return 0, errAt(start, ErrBudget, "vec of %d zero-sized elements exceeds the message's budget", n)
	}
	return int(n), nil
}

// sleb reads a signed LEB128 that must fit in 64 bits.
func (r *reader) sleb(what string) (int64, error) {
	var v int64
	start := r.pos
	var shift uint
	for {
		if r.pos >= len(r.data) {
			return 0, r.truncated(what)
		}
		c := r.data[r.pos]
		r.pos++
		if shift >= 63 {
			// Only sign extension may remain.
			if shift == 63 && c&0x7f != 0 && c&0x7f != 0x7f {
				return 0, errAt(start, ErrFormat, "%s does not fit in 64 bits", what)
			}
			if shift > 63 && c&0x7f != 0 && c&0x7f != 0x7f {
				return 0, errAt(start, ErrFormat, "%s does not fit in 64 bits", what)
			}
			if shift == 63 {
				v |= int64(c&1) << 63
			}
		} else {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c < 0x80 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
	}
}

// lebSpan returns the bytes of the next LEB128 number without decoding it.
func (r *reader) lebSpan(what string) ([]byte, error) {
	start := r.pos
	for {
		if r.pos >= len(r.data) {
			return nil, r.truncated(what)
		}
		c := r.data[r.pos]
		r.pos++
		if c < 0x80 {
			return r.data[start:r.pos], nil
		}
	}
}

// nat reads an arbitrary-precision nat.
func (r *reader) nat() (*big.Int, error) {
	p, err := r.lebSpan("nat")
	if err != nil {
		return nil, err
	}
	if len(p) <= 9 {
		var v uint64
		for i, c := range p {
			v |= uint64(c&0x7f) << (7 * i)
		}
		return new(big.Int).SetUint64(v), nil
	}
	return leb128.GroupsToBig(p), nil
}

// int reads an arbitrary-precision int.
func (r *reader) int() (*big.Int, error) {
	p, err := r.lebSpan("int")
	if err != nil {
		return nil, err
	}
	if len(p) <= 9 {
		var v int64
		for i, c := range p {
			v |= int64(c&0x7f) << (7 * i)
		}
		if shift := 7 * len(p); p[len(p)-1]&0x40 != 0 {
			v |= -1 << shift
		}
		return big.NewInt(v), nil
	}
	v := leb128.GroupsToBig(p)
	if p[len(p)-1]&0x40 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(7*len(p))))
	}
	return v, nil
}

func (r *reader) fixed(n int, what string) ([]byte, error) { return r.take(uint64(n), what) }

func (r *reader) boolean() (bool, error) {
	c, err := r.byte("bool")
	if err != nil {
		return false, err
	}
	switch c {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, errAt(r.pos-1, ErrFormat, "bool byte is %#x, not 0 or 1", c)
}

// text reads a UTF-8 text and returns it aliasing the message.
func (r *reader) text(what string) ([]byte, error) {
	start := r.pos
	n, err := r.length(what+" length", 1)
	if err != nil {
		return nil, err
	}
	b := r.data[r.pos : r.pos+n]
	r.pos += n
	if !utf8.Valid(b) {
		return nil, errAt(start, ErrFormat, "%s is not valid UTF-8", what)
	}
	return b, nil
}

// maxPrincipalLen is the longest principal the Internet Computer has.
const maxPrincipalLen = 29

// principalRef reads a transparent principal reference: the 0x01 flag, the
// length and the bytes (aliasing the message).
func (r *reader) principalRef() ([]byte, error) {
	c, err := r.byte("principal reference")
	if err != nil {
		return nil, err
	}
	if c != 1 {
		if c == 0 {
			return nil, errAt(r.pos-1, ErrFormat, "opaque references are not supported")
		}
		return nil, errAt(r.pos-1, ErrFormat, "reference flag is %#x, not 1", c)
	}
	start := r.pos
	n, err := r.length("principal length", 1)
	if err != nil {
		return nil, err
	}
	if n > maxPrincipalLen {
		return nil, errAt(start, ErrFormat, "principal of %d bytes is longer than %d", n, maxPrincipalLen)
	}
	b := r.data[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// funcRef reads a func reference: flag, principal, method name.
func (r *reader) funcRef() ([]byte, []byte, error) {
	c, err := r.byte("func reference")
	if err != nil {
		return nil, nil, err
	}
	if c != 1 {
		return nil, nil, errAt(r.pos-1, ErrFormat, "func reference flag is %#x, not 1", c)
	}
	p, err := r.principalRef()
	if err != nil {
		return nil, nil, err
	}
	m, err := r.text("method name")
	if err != nil {
		return nil, nil, err
	}
	return p, m, nil
}
