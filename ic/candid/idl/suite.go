package idl

import (
	"fmt"
	"os"
	"unicode/utf8"

	"alpnib.dev/ic/candid"
)

// This file reads the official Candid conformance format (*.test.did, see
// the suite's README): type definitions followed by assertions that an input
// decodes or not at some types, and that two inputs give equal values or not.
// ReadTestFile and Assertion.Run are exported so that the conformance test,
// and anyone checking another Candid corpus, can run it.

// TestKind is the form of an assertion.
type TestKind int

// The four assertion forms.
const (
	Accept   TestKind = TestKind(testAccept)   // assert <input> : (types)
	Reject   TestKind = TestKind(testReject)   // assert <input> !: (types)
	Equal    TestKind = TestKind(testEqual)    // assert <input> == <input> : (types)
	NotEqual TestKind = TestKind(testNotEqual) // assert <input> != <input> : (types)
)

// Input is one side of an assertion: binary Candid (`blob "…"`) or Candid
// text.
type Input struct {
	Blob  bool
	Bytes []byte
}

// decode reads the input at types: binary with candid.DecodeValues, text with
// the text-value parser (names in annotations resolved in the test file).
// Positions in a text input's errors are relative to the input itself.
func (in Input) decode(b *builder, types []*candid.Type) ([]candid.Value, error) {
	if in.Blob {
		return candid.DecodeValues(in.Bytes, types)
	}
	if !utf8.Valid(in.Bytes) {
		return nil, fmt.Errorf("text input is not UTF-8")
	}
	return parseValuesIn(b, "", string(in.Bytes), types)
}

// Assertion is one `assert …;` of a test file.
type Assertion struct {
	Pos         Pos
	Kind        TestKind
	Left, Right Input
	Types       []*candid.Type
	Desc        string

	builder *builder
}

// Name is "line N description", a subtest name (the runner adds the file).
func (a *Assertion) Name() string {
	if a.Desc == "" {
		return fmt.Sprintf("line %d", a.Pos.Line)
	}
	return fmt.Sprintf("line %d %s", a.Pos.Line, a.Desc)
}

// Run checks the assertion and returns nil when it holds, or why not.
func (a *Assertion) Run() error {
	left, lerr := a.Left.decode(a.builder, a.Types)
	switch a.Kind {
	case Accept:
		if lerr != nil {
			return fmt.Errorf("should decode but fails: %v", lerr)
		}
		return nil
	case Reject:
		if lerr == nil {
			return fmt.Errorf("should fail but decodes to %s", showValues(left))
		}
		return nil
	}
	if lerr != nil {
		return fmt.Errorf("left input fails: %v", lerr)
	}
	right, rerr := a.Right.decode(a.builder, a.Types)
	if rerr != nil {
		return fmt.Errorf("right input fails: %v", rerr)
	}
	same := len(left) == len(right)
	for i := 0; same && i < len(left); i++ {
		same = left[i].Equal(right[i])
	}
	if a.Kind == Equal && !same {
		return fmt.Errorf("values differ: %s != %s", showValues(left), showValues(right))
	}
	if a.Kind == NotEqual && same {
		return fmt.Errorf("values are equal: %s", showValues(left))
	}
	return nil
}

func showValues(vs []candid.Value) string {
	s := "("
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += v.String()
	}
	return s + ")"
}

// TestFile is a parsed *.test.did file.
type TestFile struct {
	Path       string
	Assertions []*Assertion
}

// ReadTestFile parses a *.test.did file: its definitions are checked like a
// .did file's and every assertion's types are built in that environment.
func ReadTestFile(path string) (*TestFile, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read test file: %w", err)
	}
	return ParseTestFile(path, src)
}

// ParseTestFile is ReadTestFile on a source in memory.
func ParseTestFile(path string, src []byte) (*TestFile, error) {
	f, err := parseSource(path, string(src), true)
	if err != nil {
		return nil, err
	}
	if len(f.imports) > 0 {
		return nil, errorf(f.imports[0].pos, "imports are not supported in test files")
	}
	e := newEnv()
	for _, d := range f.defs {
		if err := e.add(d); err != nil {
			return nil, err
		}
	}
	if err := e.checkDefs(); err != nil {
		return nil, err
	}
	b, err := newBuilder(e)
	if err != nil {
		return nil, err
	}
	tf := &TestFile{Path: path}
	for _, t := range f.tests {
		if err := e.checkArgs(t.types); err != nil {
			return nil, err
		}
		types, err := b.tuple(t.types)
		if err != nil {
			return nil, err
		}
		tf.Assertions = append(tf.Assertions, &Assertion{
			Pos:     t.pos,
			Kind:    TestKind(t.kind),
			Left:    Input{Blob: t.left.blob, Bytes: t.left.bytes},
			Right:   Input{Blob: t.right.blob, Bytes: t.right.bytes},
			Types:   types,
			Desc:    t.desc,
			builder: b,
		})
	}
	return tf, nil
}
