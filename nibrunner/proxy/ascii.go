package proxy

// HTTP's grammar is ASCII (RFC 9110 §5.1, §5.6.2): a field name or a
// token is compared byte by byte, A-Z folded to a-z and nothing else. A
// Unicode case fold (bytes.EqualFold) takes "Tranſfer-Encoding" (U+017F)
// for Transfer-Encoding and "chunKed" (U+212A) for chunked, which a
// backend reading the bytes as written does not: that difference is how
// requests are smuggled.

// tchar is RFC 9110 §5.6.2's token characters.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// fieldByte is what a field value may hold (RFC 9110 §5.5): visible
// ASCII, SP, HTAB and obs-text; never CR, LF, NUL or another control.
var fieldByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	t['\t'] = true
	return t
}()

// isToken reports whether b is a non-empty token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tchar[c] {
			return false
		}
	}
	return true
}

// validValue reports whether a field value holds only what RFC 9110 §5.5
// allows.
func validValue(b []byte) bool {
	for _, c := range b {
		if !fieldByte[c] {
			return false
		}
	}
	return true
}

// lowerASCII folds one byte, A-Z only.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold reports whether a and b are equal with A-Z folded to a-z and
// no other byte folded.
func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}
