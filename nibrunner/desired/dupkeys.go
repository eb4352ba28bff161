package desired

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// duplicateKeys names each key that an object of data, a JSON document
// Decode has read, gives twice (on other bytes it returns what it can and
// does not panic). encoding/json keeps the last of them without a
// word, which would let a second "instances" drop the first's apps unseen;
// JSON leaves which one a reader takes up to it (RFC 8259, 4).
//
// It scans the bytes once, without building anything: keys are compared
// as they are written, and unescaped only when they hold a backslash, so
// "a" and "\u0061" are one key.
func duplicateKeys(data []byte) []Reason {
	var (
		stack  []frame
		out    []Reason
		expect bool // the next string in an object is a key
	)
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{':
			stack = append(stack, frame{object: true, index: -1})
			expect = true
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expect = false
		case ',':
			if len(stack) == 0 {
				continue
			}
			if top := &stack[len(stack)-1]; top.object {
				expect = true
			} else {
				top.index++
			}
		case '"':
			end := stringEnd(data, i)
			if expect && len(stack) > 0 {
				top := &stack[len(stack)-1]
				key := data[i+1 : end]
				if bytes.IndexByte(key, '\\') >= 0 {
					var k string
					json.Unmarshal(data[i:end+1], &k) // valid: Decode read it
					key = []byte(k)
				}
				top.key = key
				if top.seen(key) {
					out = append(out, Reason{Path: pathOf(stack), Rule: "is given twice in one object: name each key once (which of the two a reader takes is up to it)"})
				}
				expect = false
			}
			i = end
		}
	}
	return out
}

// frame is one open object or array: the keys an object gave so far and
// the one being read, or the index an array is at.
type frame struct {
	object bool
	key    []byte
	keys   [][]byte
	many   map[string]bool
	index  int
}

// seen records key and says whether the object gave it before. Keys are
// kept in a slice while there are few, in a map past 32.
func (f *frame) seen(key []byte) bool {
	if f.many != nil {
		if f.many[string(key)] {
			return true
		}
		f.many[string(key)] = true
		return false
	}
	for _, k := range f.keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	f.keys = append(f.keys, key)
	if len(f.keys) > 32 {
		f.many = make(map[string]bool, 64)
		for _, k := range f.keys {
			f.many[string(k)] = true
		}
		f.keys = nil
	}
	return false
}

// stringEnd is the index of the quote closing the string opening at i.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(data) - 1
}

// pathOf renders the path to the key being read, as Reason paths are.
func pathOf(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		if !f.object {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(f.key)
	}
	return b.String()
}
