package explain

import (
	"errors"
	"testing"
)

func TestTheHostsMessageSaysTheSourcesProblemThenTheRefusal(t *testing.T) {
	const keeping = "the host keeps converging on the document it accepted before (sha256 0123456789ab…)"
	tests := []struct {
		name, problem, refusal string
		noDocument             bool
		want                   string
	}{
		{"nothing to say", "", "", false, ""},
		{"a refusal alone", "", "desired.json was refused (…): x", false, "desired.json was refused (…): x"},
		{"a missing file alone", "", "no document to take (…): gone", true, "no document to take (…): gone"},
		{"the source's problem alone", "s3://b/k cannot be read", "", false, "s3://b/k cannot be read"},
		{"both, the source's first", "s3://b/k cannot be read", "desired.json was refused (…): x", false, "s3://b/k cannot be read; desired.json was refused (…): x"},
		{"the source is why there is no document", "s3://b/k does not exist", "no document to take (…): s3://b/k does not exist", true, "s3://b/k does not exist (" + keeping + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HostMessage(tt.problem, tt.refusal, tt.noDocument, keeping); got != tt.want {
				t.Fatalf("HostMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWhatTheHostDoesMeanwhileNamesTheDocumentInForce(t *testing.T) {
	if got := Keeping(""); got != "no document was accepted yet, so this host runs nothing" {
		t.Fatalf("Keeping with none = %q", got)
	}
	if got := Keeping("0123456789abcdef"); got != "the host keeps converging on the document it accepted before (sha256 0123456789ab…)" {
		t.Fatalf("Keeping = %q", got)
	}
	if got := NoDocument("k", errors.New("/x does not exist")); got != "no document to take (k): /x does not exist" {
		t.Fatalf("NoDocument = %q", got)
	}
	if got := Refused("k", "a; b"); got != "desired.json was refused (k): a; b" {
		t.Fatalf("Refused = %q", got)
	}
}
