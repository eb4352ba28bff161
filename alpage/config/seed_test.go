package config

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// seedRelease is the release the seed documents.
const seedRelease = "v0.5.0"

// seedBlock is one block as the seed schema (testdata/seed-schema.txt, the
// v0.5.0 reference page the project was specified from) documents it.
type seedBlock struct {
	header, since, doc string
	fields             []FieldDoc
}

// readSeed parses the seed page: a header line ending in "{ }", a line of
// "<since> <doc>", the "Field Kind Required Since Description" line, then
// one row per field until a blank line.
func readSeed(t *testing.T) []seedBlock {
	t.Helper()
	f, err := os.Open("testdata/seed-schema.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), " "))
	}
	var out []seedBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasSuffix(lines[i], "{ }") {
			continue
		}
		b := seedBlock{header: lines[i]}
		i += 2
		b.since, b.doc, _ = strings.Cut(lines[i], " ")
		i += 2
		if lines[i] != "Field Kind Required Since Description" {
			t.Fatalf("seed line %d: %q, want the field table header", i+1, lines[i])
		}
		for i++; i < len(lines) && lines[i] != ""; i++ {
			parts := strings.SplitN(lines[i], " ", 5)
			if len(parts) != 5 {
				t.Fatalf("seed line %d: %q is not a field row", i+1, lines[i])
			}
			b.fields = append(b.fields, FieldDoc{Name: parts[0], Kind: parts[1], Required: parts[2] == "yes", Since: parts[3], Doc: parts[4]})
		}
		out = append(out, b)
	}
	return out
}

// The seed is the specification: every block and field it names must be one
// the loader decodes, with the same kind, required-ness, since and words.
func TestEveryBlockAndFieldOfTheSeedSchemaIsDecodedAsItSays(t *testing.T) {
	seed := readSeed(t)
	// The seed is the schema as of its release: a block added since (a
	// new proposal kind, in its own file of alpage/kinds) is not in it.
	var asOfSeed []BlockDoc
	for _, b := range Blocks() {
		if atOrBefore(b.Since, seedRelease) {
			asOfSeed = append(asOfSeed, b)
		}
	}
	if len(seed) != len(asOfSeed) {
		t.Errorf("the seed documents %d blocks, the schema %d as of %s", len(seed), len(asOfSeed), seedRelease)
	}
	byHeader := map[string]BlockDoc{}
	for _, b := range Blocks() {
		byHeader[b.Header] = b
	}
	for _, sb := range seed {
		b, ok := byHeader[sb.header]
		if !ok {
			t.Errorf("seed block %s is not in the schema", sb.header)
			continue
		}
		if b.Since != sb.since || b.Doc != sb.doc {
			t.Errorf("%s: since %q doc %q\nseed: since %q doc %q", sb.header, b.Since, b.Doc, sb.since, sb.doc)
		}
		// fields added since the seed's release are not in it either
		var got []FieldDoc
		for _, f := range Fields(b.Type) {
			if atOrBefore(f.Since, seedRelease) {
				got = append(got, f)
			}
		}
		if len(got) != len(sb.fields) {
			t.Errorf("%s: %d fields, the seed lists %d", sb.header, len(got), len(sb.fields))
			continue
		}
		for i, want := range sb.fields {
			if got[i] != want {
				t.Errorf("%s field %d:\n got  %+v\n seed %+v", sb.header, i, got[i], want)
			}
		}
	}
}
