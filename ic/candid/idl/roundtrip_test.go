package idl

import (
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
	files, err := filepath.Glob(filepath.Join(conformanceDir(t), "*.test.did"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	checked := 0
	for _, file := range files {
		tf, err := ReadTestFile(file)
		if err != nil {
			t.Fatalf("%v", err)
		}
		for _, a := range tf.Assertions {
			for _, in := range []Input{a.Left, a.Right} {
				if in.Blob || in.Bytes == nil {
					continue
				}
				vs, err := in.decode(a.builder, a.Types)
				if err != nil {
					continue // a text the suite expects to fail
				}
				checked++
				data, err := candid.EncodeValues(a.Types, vs)
				if err != nil {
					t.Errorf("%s:%d: encode %s: %v", filepath.Base(file), a.Pos.Line, showValues(vs), err)
					continue
				}
				back, err := candid.DecodeValues(data, a.Types)
				if err != nil {
					t.Errorf("%s:%d: decode %x: %v", filepath.Base(file), a.Pos.Line, data, err)
					continue
				}
				for i := range vs {
					if !vs[i].Equal(back[i]) {
						t.Errorf("%s:%d: %s came back as %s", filepath.Base(file), a.Pos.Line, vs[i], back[i])
					}
				}
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d text values round-tripped; expected the suite's ~250", checked)
	}
	t.Logf("%d text values round-tripped", checked)
}
