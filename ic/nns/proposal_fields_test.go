package nns

import (
	"strings"
	"testing"
)

func TestGovernanceRefusesATitleOutsideFiveTo256Bytes(t *testing.T) {
	for title, ok := range map[string]bool{
		"":                       false,
		"four":                   false,
		"five!":                  true,
		strings.Repeat("x", 256): true,
		strings.Repeat("x", 257): false,
		"ünï":                    true, // 6 bytes, 3 characters: governance counts bytes
	} {
		if err := CheckProposalTitle(title); (err == nil) != ok {
			t.Errorf("title %q: %v, want ok=%v", title, err, ok)
		}
	}
}

func TestGovernanceRefusesASummaryOver30000Bytes(t *testing.T) {
	if err := CheckProposalSummary(strings.Repeat("x", 30000)); err != nil {
		t.Fatal(err)
	}
	if err := CheckProposalSummary(strings.Repeat("x", 30001)); err == nil {
		t.Fatal("a 30001-byte summary was accepted")
	}
}

func TestGovernanceTakesOnlyForumLinksOrNone(t *testing.T) {
	for url, want := range map[string]string{
		"": "",
		"https://forum.dfinity.org/t/some-thread/1":              "",
		"https://forum.dfinity.org":                              "",
		"http://forum.dfinity.org/t/1":                           "does not begin with https://",
		"ftp://bad":                                              "shorter than 10",
		"https://github.com/dfinity/ic/pull/1":                   "links to github.com",
		"https://forum.dfinity.org:443/t/1":                      "links to forum.dfinity.org:443",
		"https://user@forum.dfinity.org/t/1":                     "credentials",
		"https://forum.dfinity.org/https://x":                    "second ://",
		"https://forum.dfinity.org/" + strings.Repeat("x", 2048): "longer than 2048",
	} {
		err := CheckProposalURL(url)
		switch {
		case want == "" && err != nil:
			t.Errorf("url %q refused: %v", url, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("url %q: %v, want an error saying %q", url, err, want)
		}
	}
}
