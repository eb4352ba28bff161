package idl

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"alpnib.dev/ic/candid"
)

// TestEveryTextValueOfTheSuiteSurvivesEncodeAndDecode extends the official
// suite the way its README recommends: every textual input that parses is
// encoded with candid.EncodeValues and decoded back at the same types, and
// must come back equal. It ties the text parser, the encoder and the decoder
// to one meaning of each value.
func TestEveryTextValueOfTheSuiteSurvivesEncodeAndDecode(t *testing.T) {
	checked := 0
	forEachSuiteInput(t, func(where string, a *Assertion, in Input) {
		if in.Blob {
			return
		}
		vs, err := in.decode(a.builder, a.Types)
		if err != nil {
			return // a text the suite expects to fail
		}
		checked++
		data, err := candid.EncodeValues(a.Types, vs)
		if err != nil {
			t.Errorf("%s: encode %s: %v", where, showValues(vs), err)
			return
		}
		back, err := candid.DecodeValues(data, a.Types)
		if err != nil {
			t.Errorf("%s: decode %x: %v", where, data, err)
			return
		}
		for i := range vs {
			if !vs[i].Equal(back[i]) {
				t.Errorf("%s: %s came back as %s", where, vs[i], back[i])
			}
		}
	})
	if checked < 200 {
		t.Errorf("only %d text values round-tripped; expected the suite's ~250", checked)
	}
	t.Logf("%d text values round-tripped", checked)
}

// TestEveryDecodedValueOfTheSuiteIsPrintedAsTextThatReadsBack prints every
// value the suite decodes or parses with FormatValues and reads the text
// back at the same types: the printer and the text parser agree.
func TestEveryDecodedValueOfTheSuiteIsPrintedAsTextThatReadsBack(t *testing.T) {
	checked := 0
	forEachSuiteInput(t, func(where string, a *Assertion, in Input) {
		vs, err := in.decode(a.builder, a.Types)
		if err != nil || hasNonFinite(vs) {
			return
		}
		checked++
		text := FormatValues(vs)
		back, err := parseValuesIn(a.builder, "", text, a.Types)
		if err != nil {
			t.Errorf("%s: %s does not read back: %v", where, text, err)
			return
		}
		for i := range vs {
			if !vs[i].Equal(back[i]) {
				t.Errorf("%s: %s read back as %s", where, FormatValue(vs[i]), FormatValue(back[i]))
			}
		}
	})
	if checked < 300 {
		t.Errorf("only %d values printed and read back", checked)
	}
	t.Logf("%d values printed and read back", checked)
}

// forEachSuiteInput calls f with each input (left and right) of every
// assertion of the official suite that has one, and where it is
// ("file:line").
func forEachSuiteInput(t *testing.T, f func(where string, a *Assertion, in Input)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(conformanceDir(t), "*.test.did"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		tf, err := ReadTestFile(file)
		if err != nil {
			t.Fatalf("%v", err)
		}
		for _, a := range tf.Assertions {
			for _, in := range []Input{a.Left, a.Right} {
				if in.Bytes != nil {
					f(fmt.Sprintf("%s:%d", filepath.Base(file), a.Pos.Line), a, in)
				}
			}
		}
	}
}

func hasNonFinite(vs []candid.Value) bool {
	for _, v := range vs {
		switch v.Kind {
		case candid.KindFloat32, candid.KindFloat64:
			if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
				return true
			}
		case candid.KindOpt:
			if v.Opt != nil && hasNonFinite([]candid.Value{*v.Opt}) {
				return true
			}
		case candid.KindVec:
			if hasNonFinite(v.Elems) {
				return true
			}
		case candid.KindRecord, candid.KindVariant:
			for _, f := range v.Fields {
				if hasNonFinite([]candid.Value{f.Value}) {
					return true
				}
			}
		}
	}
	return false
}
