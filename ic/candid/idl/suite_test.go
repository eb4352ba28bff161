package idl

import (
	"strings"
	"testing"
)

const sampleSuite = `
type L = opt record { head : nat; tail : L };
assert blob "DIDL\00\01\7d\2a" == "(42)" : (nat) "nat 42";
assert blob "DIDL\00\01\7d\2a" == "(43)" : (nat) "wrong on purpose";
assert blob "DIDL\00\01\7d\2a" != "(43)" : (nat);
assert blob "DIDL\00\01\7d\2a" != "(42)" : (nat) "equal on purpose";
assert "(opt record { head = 1; tail = null })" : (L) "text at a named type";
assert "(1 : L)" : (L) "a bad annotation";
assert "(5)" !: (text);
assert "(5)" !: (nat) "decodes on purpose";
`

func TestTheSuiteRunnerPassesTrueAssertionsAndFailsFalseOnes(t *testing.T) {
	tf, err := ParseTestFile("sample.test.did", []byte(sampleSuite))
	if err != nil {
		t.Fatalf("ParseTestFile: %v", err)
	}
	if len(tf.Assertions) != 8 {
		t.Fatalf("%d assertions, want 8", len(tf.Assertions))
	}
	for _, a := range tf.Assertions {
		err := a.Run()
		wantFail := strings.Contains(a.Desc, "on purpose") || a.Desc == "a bad annotation"
		if wantFail && err == nil {
			t.Errorf("%s passed but is false", a.Name())
		}
		if !wantFail && err != nil {
			t.Errorf("%s failed: %v", a.Name(), err)
		}
	}
	if got := tf.Assertions[0].Name(); got != "line 3 nat 42" {
		t.Errorf("assertion name %q", got)
	}
}

func TestCandidTestsAddsAFolderToTheSuite(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CANDID_TESTS", dir)
	dirs := suiteDirs(t)
	if len(dirs) != 2 || dirs[1] != dir {
		t.Errorf("suite folders %v, want the official one and %s", dirs, dir)
	}
}

func TestAMalformedTestFileIsAnErrorWithItsPosition(t *testing.T) {
	_, err := ParseTestFile("bad.test.did", []byte("assert blob \"DIDL\" ? (nat);"))
	if err == nil || !strings.HasPrefix(err.Error(), "bad.test.did:1:20") {
		t.Errorf("err = %v", err)
	}
	_, err = ParseTestFile("bad.test.did", []byte("assert \"(1)\" : (Missing);"))
	if err == nil || !strings.Contains(err.Error(), "unbound type identifier Missing") {
		t.Errorf("err = %v", err)
	}
}
