package desired

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// typos is the base document with the mistakes a person makes by hand: a
// field spelt as another unit, one in the wrong case, one that does not
// exist, and a field of another kind of a union.
func typos(t *testing.T) []byte {
	t.Helper()
	tree := parseTree(t, base)
	set("instances.0.config.resources.memoryMB", 256.0)(tree)
	set("instances.1.Hostnames", []any{})(tree)
	set("futureField", map[string]any{"x": 1.0})(tree)
	set("instances.0.layers.0.destinationPath", "/usr/bin/x")(tree)
	data, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestAnUnknownPropertyIsWarnedOfByPathWithTheFieldItWasMeantToBe(t *testing.T) {
	doc, warnings, err := DecodeFields(typos(t), FieldWarn)
	if err != nil || doc == nil {
		t.Fatalf("the seed ignores unknown properties, but the document was refused: %v", err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{
		`instances[0].layers[0].destinationPath: unknown property for kind "filesystem", ignored: it belongs to kind executable`,
		"instances[0].config.resources.memoryMB: unknown property, ignored: did you mean memoryMib?",
		"instances[1].Hostnames: unknown property, ignored: did you mean hostnames?",
		"futureField: unknown property, ignored: the properties here are $schema, hostId, volumes, instances, checkpoints, exports",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if doc.Instances[0].Config.Resources.MemoryMib != 128 {
		t.Fatalf("memoryMB changed memoryMib to %d", doc.Instances[0].Config.Resources.MemoryMib)
	}
}

func TestStrictFieldValidationRefusesTheDocumentForAnUnknownProperty(t *testing.T) {
	doc, warnings, err := DecodeFields(typos(t), FieldStrict)
	var r *Refusal
	if doc != nil || !errors.As(err, &r) {
		t.Fatalf("strict validation accepted unknown properties (doc %v, err %v)", doc != nil, err)
	}
	if len(warnings) != 0 {
		t.Fatalf("strict validation returned warnings beside its refusal: %v", warnings)
	}
	if got := r.Reasons[1].String(); got != "instances[0].config.resources.memoryMB: unknown property: did you mean memoryMib?" {
		t.Fatalf("second reason %q", got)
	}
	if len(r.Reasons) != 4 {
		t.Fatalf("want the 4 unknown properties as reasons, got %s", r.Error())
	}
}

func TestATypoThatLeavesARequiredFieldMissingIsRefusedWithTheHintBeside(t *testing.T) {
	tree := parseTree(t, base)
	res := tree.(map[string]any)["instances"].([]any)[0].(map[string]any)["config"].(map[string]any)["resources"].(map[string]any)
	delete(res, "memoryMib")
	res["memoryMB"] = 256.0
	data, _ := json.Marshal(tree)
	doc, warnings, err := DecodeFields(data, FieldWarn)
	if doc != nil || err == nil {
		t.Fatal("a document missing memoryMib was accepted")
	}
	if !strings.Contains(err.Error(), "instances[0].config.resources.memoryMib: is required") {
		t.Fatalf("refusal %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0].Rule, "did you mean memoryMib?") {
		t.Fatalf("the refusal comes without the hint that explains it: %v", warnings)
	}
}

func TestAFieldOfAnotherKindHoldingItsZeroValueIsNotWarnedOf(t *testing.T) {
	// As a serializer writing every field of a union writes it.
	tree := parseTree(t, base)
	set("instances.0.layers.0.destinationPath", "")(tree)
	set("instances.1.config.healthCheck.intervalMs", 0.0)(tree)
	data, _ := json.Marshal(tree)
	if _, warnings, err := DecodeFields(data, FieldStrict); err != nil || len(warnings) > 0 {
		t.Fatalf("%v %v", err, warnings)
	}
}

func TestADocumentWithOnlyKnownPropertiesHasNoWarnings(t *testing.T) {
	for _, path := range append(examples(t), "") {
		data := []byte(base)
		if path != "" {
			var err error
			if data, err = os.ReadFile(path); err != nil {
				t.Fatal(err)
			}
		}
		if _, warnings, err := DecodeFields(data, FieldStrict); err != nil || len(warnings) > 0 {
			t.Errorf("%s: %v %v", path, err, warnings)
		}
	}
}

func TestAPropertyNameAPersonCouldMisreadIsQuotedInItsPath(t *testing.T) {
	_, warnings, _ := DecodeFields([]byte(`{"hostId":"h","volumes":[],"instances":[],"checkpoints":[],"exports":[],"a b\u202e":1}`), FieldWarn)
	if len(warnings) != 1 || warnings[0].Path != `"a b\u202e"` {
		t.Fatalf("warnings %v", warnings)
	}
}
