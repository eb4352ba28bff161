package desired

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite golden files and the published schema")

const schemaPath = "../../docs/" + SchemaFile

func TestThePublishedSchemaIsCurrent(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/%s is stale: run `go generate ./nibrunner/desired`", SchemaFile)
	}
}

// lookaheadEngine compiles patterns with Go's regexp, except the seed's
// GuestPath pattern, whose lookahead Go cannot compile: that one is
// MatchGuestPath, the decoder's own twin of it.
func lookaheadEngine(pattern string) (jsonschema.Regexp, error) {
	if pattern == GuestPathPattern {
		return guestPathRegexp{}, nil
	}
	return regexp.Compile(pattern)
}

type guestPathRegexp struct{}

func (guestPathRegexp) MatchString(s string) bool { return MatchGuestPath(s) }
func (guestPathRegexp) String() string            { return GuestPathPattern }

func compileSchema(t testing.TB, path string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.UseRegexpEngine(lookaheadEngine)
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	return s
}

func validates(t testing.TB, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func TestEveryExampleValidatesAgainstTheSchemaAndIsAccepted(t *testing.T) {
	s := compileSchema(t, schemaPath)
	for _, path := range examples(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := validates(t, s, data); err != nil {
			t.Errorf("%s does not validate: %v", path, err)
		}
		if _, err := Decode(data); err != nil {
			t.Errorf("%s refused: %v", path, err)
		}
	}
}

// schemaCannotSay are the refusals no JSON Schema keyword expresses: the
// decoder's rules across entries and inside string values. The schema
// must refuse every other one, so the schema and the decoder agree.
var schemaCannotSay = map[string]bool{
	"an environment value refers to a secret":               true,
	"an environment value refers to the data dir in braces": true,
	"an environment value refers to a longer name":          true,
	"an export's environment refers to NIBRUN_":             true,
	"a port is named http":                                  true,
	"two ports share a name":                                true,
	"a port reuses the http port":                           true,
	"two ports share a guest port":                          true,
	"an instance's volume is not in the document":           true,
	"an instance runs on another app's volume":              true,
	"two apps name one hostname":                            true,
	"an app names one hostname twice":                       true,
	"a volume names another app than its instance":          true,
	"an export names another app than its volume's":         true,
	"two instances share an app id":                         true,
	"two volumes share a volume id":                         true,
	"two checkpoints share an id":                           true,
	"two exports share an id":                               true,
}

func TestTheSchemaRefusesWhatTheDecoderRefuses(t *testing.T) {
	s := compileSchema(t, schemaPath)
	if err := validates(t, s, []byte(base)); err != nil {
		t.Fatalf("base does not validate: %v", err)
	}
	for _, tc := range refusals {
		tree := parseTree(t, base)
		tc.mutate(tree)
		err := validates(t, s, mustJSON(t, tree))
		switch {
		case err == nil && !schemaCannotSay[tc.name]:
			t.Errorf("%s: the decoder refuses it but the schema accepts it", tc.name)
		case err != nil && schemaCannotSay[tc.name]:
			t.Errorf("%s: listed as beyond the schema, yet the schema refuses it: %v", tc.name, firstLine(err))
		}
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func TestTheSchemaIsDraft2020AndNamesTheSeedAddress(t *testing.T) {
	data, _ := Schema()
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if top["$schema"] != "https://json-schema.org/draft/2020-12/schema" || top["$id"] != SchemaID || top["title"] != "HostDesiredState" {
		t.Fatalf("header: %v %v %v", top["$schema"], top["$id"], top["title"])
	}
	defs := top["$defs"].(map[string]any)
	for _, name := range []string{"HostId", "AppId", "VolumeId", "DeploymentId", "CheckpointId", "ExportId", "Sha256Digest", "ObjectKey",
		"GuestPath", "ExecutablePath", "HttpPort", "GuestPort", "PortName", "Hostname", "IdleTimeoutMs", "MaxLifetimeMs",
		"TenantValue", "TenantArguments", "TenantEnvironment", "DesiredPresence", "DesiredInstanceState", "AppHostnameKind",
		"DesiredVolume", "DesiredInstance", "DesiredCheckpoint", "DesiredExport", "InitialContents", "DesiredLayer", "AppConfig",
		"Command", "InstanceResources", "HealthCheck", "RestartPolicy", "InstancePort", "AppHostname", "ActivationPolicy", "SleepPolicy"} {
		if _, ok := defs[name]; !ok {
			t.Errorf("the seed's type %s has no $defs entry", name)
		}
	}
}
