package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func recorded(st Status) *State {
	s := New()
	s.Proposals["p"] = &Proposal{Kind: "membership", ProposalID: 7, PayloadSHA256: "aa", Status: st, SubmittedAt: TimeOf(t0)}
	return s
}

func TestAMissingStateFileIsAnEmptyState(t *testing.T) {
	s, err := Load(filepath.Join(t.TempDir(), "state.json"))
	if err != nil || len(s.Proposals) != 0 {
		t.Fatalf("Load = %+v, %v", s, err)
	}
}

func TestStateIsWrittenWithTwoSpaceIndentSortedKeysAndATrailingNewline(t *testing.T) {
	s := New()
	s.Proposals["b"] = &Proposal{Kind: "remove_nodes", ProposalID: 2, SubmittedAt: TimeOf(t0)}
	s.Proposals["a"] = &Proposal{Kind: "membership", ProposalID: 1, SubmittedAt: TimeOf(t0), Status: StatusOpen}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	text := string(data)
	if !strings.HasSuffix(text, "}\n") || !strings.Contains(text, "\n  \"proposals\": {\n    \"a\": {") {
		t.Fatalf("unexpected layout:\n%s", text)
	}
	if strings.Index(text, `"a"`) > strings.Index(text, `"b"`) {
		t.Fatal("proposal names are not sorted")
	}
	if strings.Contains(text, "resolved_at") || strings.Contains(text, "chips") {
		t.Fatalf("empty optional fields were written:\n%s", text)
	}
	back, err := Load(path)
	if err != nil || back.Proposals["a"].Status != StatusOpen || back.Proposals["b"].ProposalID != 2 {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
}

func TestAMalformedStateFileIsRefusedNamingTheLine(t *testing.T) {
	_, err := Parse("state.json", []byte("{\n  \"proposals\": {\n    \"a\": {\"proposal_id\": \"seven\"}\n  }\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "state.json: line 3") {
		t.Fatalf("err = %v", err)
	}
	_, err = Parse("state.json", []byte(`{"proposals": {"a": {"status": "pending"}}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown status "pending"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestStatusOnlyMovesForward(t *testing.T) {
	cases := []struct {
		from, seen, want Status
		changed          bool
	}{
		{"", StatusOpen, StatusOpen, true},
		{StatusOpen, StatusAdopted, StatusAdopted, true},
		{StatusOpen, StatusExecuted, StatusExecuted, true},
		{StatusAdopted, StatusOpen, StatusAdopted, false},
		{StatusExecuted, StatusFailed, StatusExecuted, false},
		{StatusRejected, StatusOpen, StatusRejected, false},
		{StatusExecuted, "", StatusExecuted, false},
		{StatusOpen, "", StatusOpen, false},
		{StatusOpen, StatusOpen, StatusOpen, false},
	}
	for _, c := range cases {
		s := recorded(c.from)
		changed := s.Observe("p", c.seen, t0)
		if got := s.Proposals["p"].Status; got != c.want || changed != c.changed {
			t.Errorf("%q then %q: status %q changed=%v; want %q changed=%v", c.from, c.seen, got, changed, c.want, c.changed)
		}
	}
}

func TestResolvedAtIsSetOnceWhenATerminalStatusIsFirstSeen(t *testing.T) {
	s := recorded(StatusOpen)
	s.Observe("p", StatusExecuted, t0)
	s.Observe("p", StatusFailed, t0.Add(time.Hour))
	if r := s.Proposals["p"].ResolvedAt; r != TimeOf(t0) {
		t.Fatalf("resolved_at = %v, want %v", r, t0)
	}
}

func TestApplyDecisions(t *testing.T) {
	cases := []struct {
		name  string
		rec   *Proposal
		hash  string
		force bool
		want  Decision
	}{
		{"no record goes", nil, "aa", false, Submit},
		{"a terminal record is refused even with force", &Proposal{Kind: "membership", PayloadSHA256: "aa", Status: StatusExecuted}, "bb", true, Refuse},
		{"force resubmits a changed open proposal", &Proposal{Kind: "membership", PayloadSHA256: "aa", Status: StatusOpen}, "bb", true, Submit},
		{"the same hash is nothing to do", &Proposal{Kind: "membership", PayloadSHA256: "aa", Status: StatusOpen}, "aa", false, NothingToDo},
		{"the same hash recorded under the kind's old name is nothing to do", &Proposal{Kind: "resize", PayloadSHA256: "aa", Status: StatusOpen}, "aa", false, NothingToDo},
		{"a changed hash is refused without force", &Proposal{Kind: "membership", PayloadSHA256: "aa"}, "bb", false, Refuse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := Decide("p", c.rec, "membership", c.hash, c.force)
			if got != c.want {
				t.Fatalf("Decide = %v (%s), want %v", got, why, c.want)
			}
			if got != Submit && why == "" {
				t.Fatal("a refusal or no-op gave no reason")
			}
		})
	}
}

func TestARecordOfAnotherKindIsRefusedEvenWithTheSameHashNamingBothKinds(t *testing.T) {
	rec := &Proposal{Kind: "remove_nodes", ProposalID: 7, PayloadSHA256: "aa", Status: StatusOpen}
	for _, hash := range []string{"aa", "bb"} {
		got, why := Decide("halt-app1", rec, "update_subnet", hash, false)
		if got != Refuse {
			t.Fatalf("hash %s: Decide = %v (%s), want a refusal", hash, got, why)
		}
		for _, want := range []string{`proposal "halt-app1"`, "proposal 7 of kind remove_nodes", "declares kind update_subnet", "--force"} {
			if !strings.Contains(why, want) {
				t.Errorf("hash %s: %q does not say %q", hash, why, want)
			}
		}
	}
	if _, why := Decide("halt-app1", rec, "update_subnet", "aa", false); !strings.Contains(why, "restore it from git") {
		t.Errorf("the same payload under another kind does not say to restore state.json: %s", why)
	}
	if _, why := Decide("halt-app1", rec, "update_subnet", "bb", false); !strings.Contains(why, `put kind = "remove_nodes" back`) {
		t.Errorf("a changed block does not say to put its kind back: %s", why)
	}
	if got, _ := Decide("halt-app1", rec, "update_subnet", "aa", true); got != Submit {
		t.Errorf("--force: Decide = %v, want submit", got)
	}
}

func TestImportRefusesIDZeroAndANameAlreadyRecorded(t *testing.T) {
	s := recorded(StatusOpen)
	if err := s.Import("q", &Proposal{ProposalID: 0}); err == nil {
		t.Error("imported proposal id 0")
	}
	if err := s.Import("p", &Proposal{ProposalID: 9}); err == nil {
		t.Error("imported over a recorded name")
	}
	if err := s.Import("q", &Proposal{ProposalID: 9}); err != nil || s.Proposals["q"].ProposalID != 9 {
		t.Errorf("import of a new name: %v", err)
	}
}

func TestRecordRefusesToReplaceATerminalEntry(t *testing.T) {
	s := recorded(StatusFailed)
	if err := s.Record("p", &Proposal{ProposalID: 8}); err == nil || s.Proposals["p"].ProposalID != 7 {
		t.Fatalf("Record over a failed entry: %v, id now %d", err, s.Proposals["p"].ProposalID)
	}
}

// The reference tool's own state.json (Swiss-Subnet/alpage, one mainnet
// proposal recorded): we read it and write it back byte for byte, so a
// repository moving to alp keeps its file and its git history clean.
const referenceState = `{
  "proposals": {
    "swiss-subnet-wave1": {
      "kind": "resize",
      "proposal_id": 142931,
      "payload_sha256": "8caa2213d641ab88c110fb58676ce59f95d7f8198664ca347abab28a0c53b78b",
      "submitted_by": "o76xi-pjx7c-iyqao-6vavr-cbm5c-jn6mh-t3jwf-o7ha3-el6b3-5gk4z-lae",
      "neuron": 12838523358913392196,
      "host": "https://icp-api.io",
      "submitted_at": "2026-07-17T00:00:00Z"
    }
  }
}
`

func TestTheReferenceToolsStateFileRoundTripsByteForByte(t *testing.T) {
	s, err := Parse("state.json", []byte(referenceState))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Proposals["swiss-subnet-wave1"]; p.Neuron != 12838523358913392196 || p.ProposalID != 142931 {
		t.Fatalf("parsed %+v", p)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != referenceState {
		t.Fatalf("written back as\n%s\nwant\n%s", out, referenceState)
	}
}

func TestANullEntryIsRefusedNamingTheFileAndTheEntry(t *testing.T) {
	for _, doc := range []string{`{"proposals": {"p": null}}`, `{"proposals": {}, "chips": {"ab": null}}`} {
		_, err := Parse("fleet/state.json", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "state fleet/state.json:") || !strings.Contains(err.Error(), "is null") {
			t.Errorf("%s: err = %v", doc, err)
		}
	}
}

// A state file as Swiss-Subnet/alpage v0.4.0 writes it (testdata/README.md
// says where each entry comes from): every entry loads, and the file is
// written back byte for byte, then with only what changed.
func TestAStateFileOfTheReferenceV040LoadsAndRoundTripsByteForByte(t *testing.T) {
	data, err := os.ReadFile("testdata/reference-v0.4.0.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("state.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Proposals["imported-free-text-at"].SubmittedAt; got != "17 July, before the forum post" {
		t.Fatalf("free-text submitted_at read as %q", got)
	}
	if _, ok := s.Proposals["imported-without-at"].SubmittedAt.Parsed(); ok {
		t.Fatal("an empty submitted_at parsed as a time")
	}
	if p := s.Proposals["swiss-subnet-wave1"]; p.Status != StatusExecuted || p.ResolvedAt != "2026-07-21T16:01:08Z" {
		t.Fatalf("wave 1 read as %+v", p)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(data) {
		t.Fatalf("written back as\n%s\nwant\n%s", out, data)
	}

	// An observed status adds exactly its two lines.
	s.Observe("imported-free-text-at", StatusExecuted, t0)
	out, _ = s.Marshal()
	want := strings.Replace(string(data), `"submitted_at": "17 July, before the forum post"`,
		`"submitted_at": "17 July, before the forum post",
      "status": "executed",
      "resolved_at": "2026-11-29T12:00:00Z"`, 1)
	if string(out) != want {
		t.Fatalf("after one status change:\n%s\nwant\n%s", out, want)
	}
}

func TestFieldsAlpDoesNotKnowAreKeptAtEveryLevel(t *testing.T) {
	doc := `{
  "proposals": {
    "p": {
      "kind": "membership",
      "proposal_id": 7,
      "payload_sha256": "aa",
      "submitted_by": "",
      "neuron": 1,
      "host": "h",
      "submitted_at": "",
      "reviewed_by": [
        "alice",
        "bob"
      ]
    }
  },
  "chips": {
    "ab": {
      "verified": true,
      "product": "Milan-B0",
      "verified_at": "2026-08-07T12:00:00Z",
      "tcb": {
        "snp": 3
      }
    }
  },
  "format": 2
}
`
	s, err := Parse("state.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Marshal()
	if err != nil || string(out) != doc {
		t.Fatalf("written back as (%v)\n%s\nwant\n%s", err, out, doc)
	}
	// A rewrite after a change keeps them too.
	s.Observe("p", StatusOpen, t0)
	s.Chips["cd"] = &Chip{Verified: true, Product: "Genoa-B1", VerifiedAt: TimeOf(t0)}
	out, _ = s.Marshal()
	for _, kept := range []string{`"reviewed_by": [`, `"tcb": {`, `"format": 2`, `"status": "open"`, `"cd": {`} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("rewritten file lacks %s:\n%s", kept, out)
		}
	}
}

func TestADuplicateKeyAtAnyLevelIsRefusedNamingTheKeyAndItsLine(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"a field twice", "{\n  \"proposals\": {\n    \"p\": {\n      \"proposal_id\": 120,\n      \"proposal_id\": 121\n    }\n  }\n}\n",
			`line 5: "proposal_id" appears twice in proposal "p"`},
		{"the same proposal twice", "{\n  \"proposals\": {\n    \"p\": {\"proposal_id\": 120},\n    \"p\": {\"proposal_id\": 121}\n  }\n}\n",
			`line 4: "p" appears twice in proposals (the same proposal recorded twice)`},
		{"a top-level key twice", "{\n  \"proposals\": {},\n  \"proposals\": {}\n}\n",
			`line 3: "proposals" appears twice at the top of the file`},
		{"a chip twice", "{\n  \"proposals\": {},\n  \"chips\": {\n    \"ab\": {\"verified\": true},\n    \"ab\": {\"verified\": true}\n  }\n}\n",
			`line 5: "ab" appears twice in chips`},
		{"a key twice inside an unknown field", "{\n  \"proposals\": {},\n  \"x\": [{\"a\": 1,\n  \"a\": 2}]\n}\n",
			`line 4: "a" appears twice in x.[]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("state.json", []byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), "state state.json: "+c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestSavingKeepsTheFilesPermissionsAndWritesThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "shared", "state.json")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := New().Save(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "state.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s := New()
	s.Proposals["p"] = &Proposal{Kind: "membership", ProposalID: 5}
	if err := s.Save(link); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("state.json is no longer a link: %v %v", fi.Mode(), err)
	}
	got, err := Load(target)
	if err != nil || got.Proposals["p"] == nil {
		t.Fatalf("the link's target was not written: %v", err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want the 0600 the file had", fi.Mode().Perm())
	}
}
