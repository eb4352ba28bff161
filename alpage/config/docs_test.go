package config

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

func TestEveryFieldOfEveryBlockHasADocAndASince(t *testing.T) {
	for _, blk := range Blocks() {
		if blk.Doc == "" || releaseIndex(blk.Since) == len(Releases) {
			t.Errorf("block %s: doc %q, since %q", blk.Header, blk.Doc, blk.Since)
		}
		fields := Fields(blk.Type)
		if len(fields) == 0 {
			t.Errorf("block %s documents no field", blk.Header)
		}
		for _, f := range fields {
			if f.Doc == "" {
				t.Errorf("%s.%s has no doc tag", blk.Header, f.Name)
			}
			if releaseIndex(f.Since) == len(Releases) {
				t.Errorf("%s.%s has since %q, not one of %v", blk.Header, f.Name, f.Since, Releases)
			}
		}
	}
}

func TestEveryProposalBodyTagIsDocumentedToo(t *testing.T) {
	// The kind bodies are left out of the proposal table (each has its own
	// section), but still carry doc and since tags.
	typ := reflect.TypeFor[Proposal]()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Tag.Get("hcl") != "" && (f.Tag.Get("doc") == "" || f.Tag.Get("since") == "") && f.Name != "Name" {
			t.Errorf("Proposal.%s lacks doc or since", f.Name)
		}
	}
}

func TestTheGeneratedReferenceIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatalf("docs/config.md: %v; run go generate ./alpage/config", err)
	}
	if !bytes.Equal(got, Markdown()) {
		t.Fatal("docs/config.md is stale; run go generate ./alpage/config")
	}
}

func TestTheHistoryOfAnEarlyReleaseLeavesOutLaterFields(t *testing.T) {
	md := string(Markdown())
	i := bytes.Index([]byte(md), []byte("### v0.1.0\n"))
	j := bytes.Index([]byte(md), []byte("### v0.1.1\n"))
	if i < 0 || j < i {
		t.Fatal("history sections missing")
	}
	v010 := md[i:j]
	for _, later := range []string{"`sev_enabled`", "`guestos_version`", "update_subnet", "`chip_id`"} {
		if bytes.Contains([]byte(v010), []byte(later)) {
			t.Errorf("v0.1.0 history mentions %s, which came later", later)
		}
	}
	if !bytes.Contains([]byte(v010), []byte("earlier form, `resize`")) {
		t.Error("v0.1.0 history does not mention membership's earlier form resize")
	}
}
