package desired

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// base is a small document that is accepted; each refusal case breaks one
// rule in a copy of it.
const base = `{
  "hostId": "host-1",
  "volumes": [
    {"volumeId": "v1", "appId": "web", "sizeBytes": 1048576, "desiredState": "present",
     "initialContents": {"digest": "` + digest + `", "objectKey": "seed.tar", "destinationPath": "/srv"}},
    {"volumeId": "v2", "appId": "api", "sizeBytes": 1048576, "desiredState": "present"}
  ],
  "instances": [
    {"appId": "web", "deploymentId": "d1", "volumeId": "v1", "desiredState": "running",
     "layers": [
       {"kind": "filesystem", "digest": "` + digest + `", "objectKey": "base.squashfs"},
       {"kind": "executable", "digest": "` + digest + `", "objectKey": "web", "destinationPath": "/usr/bin/web"}
     ],
     "config": {
       "httpPort": 8080,
       "ports": [{"name": "admin", "guestPort": 9000}],
       "command": {"program": "/usr/bin/web", "args": ["--port", "8080"], "workingDirectory": "/data",
                   "environment": {"GREETING": "hello", "URL": "https://${NIBRUN_HOSTNAME}:$NIBRUN_HTTP_PORT/"}},
       "resources": {"vcpuCount": 1, "memoryMib": 128},
       "healthCheck": {"kind": "http", "path": "/health", "intervalMs": 1000, "timeoutMs": 500,
                       "gracePeriodMs": 5000, "healthyThreshold": 1, "unhealthyThreshold": 3},
       "restartPolicy": {"maxRestarts": 3, "initialBackoffMs": 100, "maxBackoffMs": 1000,
                         "backoffFactor": 2, "resetAfterMs": 60000}
     },
     "hostnames": [{"hostname": "web.example.com", "kind": "platform"}]},
    {"appId": "api", "deploymentId": "d1", "volumeId": "v2", "desiredState": "on-request",
     "activation": {"sleepWhen": {"kind": "traffic-idle", "timeoutMs": 60000}},
     "layers": [{"kind": "filesystem", "digest": "` + digest + `", "objectKey": "api.ext4"}],
     "config": {
       "httpPort": 3000,
       "command": {"program": "/app", "args": [], "workingDirectory": "/", "environment": {}},
       "resources": {"vcpuCount": 1, "memoryMib": 128},
       "healthCheck": {"kind": "boot-completed"},
       "restartPolicy": {"maxRestarts": 3, "initialBackoffMs": 100, "maxBackoffMs": 1000,
                         "backoffFactor": 2, "resetAfterMs": 60000}
     },
     "hostnames": []}
  ],
  "checkpoints": [{"checkpointId": "c1", "volumeId": "v1", "desiredState": "present"}],
  "exports": [{"exportId": "e1", "appId": "web", "volumeId": "v1", "objectKey": "exports/web.tar.gz",
               "desiredState": "present", "environment": {"A": "b"}}]
}`

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func parseTree(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// pathSegments splits "instances.0.config.httpPort" into its keys.
func walkTo(tree any, path string) (parent any, last string) {
	segs := strings.Split(path, ".")
	cur := tree
	for _, s := range segs[:len(segs)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[s]
		case []any:
			i, _ := strconv.Atoi(s)
			cur = c[i]
		}
	}
	return cur, segs[len(segs)-1]
}

func set(path string, v any) func(any) {
	return func(tree any) {
		parent, last := walkTo(tree, path)
		switch p := parent.(type) {
		case map[string]any:
			p[last] = v
		case []any:
			i, _ := strconv.Atoi(last)
			p[i] = v
		}
	}
}

func del(path string) func(any) {
	return func(tree any) {
		parent, last := walkTo(tree, path)
		delete(parent.(map[string]any), last)
	}
}

func appendTo(path string, v string) func(any) {
	return func(tree any) {
		parent, last := walkTo(tree, path)
		m := parent.(map[string]any)
		var item any
		_ = json.Unmarshal([]byte(v), &item)
		m[last] = append(m[last].([]any), item)
	}
}

func both(fs ...func(any)) func(any) {
	return func(tree any) {
		for _, f := range fs {
			f(tree)
		}
	}
}

func layers(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"kind": "filesystem", "digest": digest, "objectKey": fmt.Sprintf("l%d", i)}
	}
	return out
}

func strs(n int, s string) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}

type refusal struct {
	name   string
	mutate func(any)
	path   string
	rule   string // a part of the rule the reason must state
}

// refusals covers every rule of the seed and the spec: each breaks one.
var refusals = []refusal{
	// Required fields and JSON types.
	{"the host id is missing", del("hostId"), "hostId", "is required"},
	{"the host id is null", set("hostId", nil), "hostId", "is required"},
	{"volumes are missing", del("volumes"), "volumes", "is required"},
	{"instances are missing", del("instances"), "instances", "is required"},
	{"checkpoints are missing", del("checkpoints"), "checkpoints", "is required"},
	{"exports are missing", del("exports"), "exports", "is required"},
	{"instances is not an array", set("instances", map[string]any{}), "instances", "must be an array"},
	{"an instance is not an object", set("instances.0", "web"), "instances[0]", "must be an object"},
	{"a string field holds a number", set("hostId", 7.0), "hostId", "must be a string"},
	{"an integer field holds a string", set("instances.0.config.httpPort", "80"), "instances[0].config.httpPort", "must be an integer"},
	{"an integer field holds a fraction", set("instances.0.config.httpPort", 80.5), "instances[0].config.httpPort", "must be an integer"},
	{"a number field holds a string", set("instances.0.config.restartPolicy.backoffFactor", "2"), "instances[0].config.restartPolicy.backoffFactor", "must be a number"},
	{"the config is missing", del("instances.0.config"), "instances[0].config", "is required"},
	{"the command's environment is missing", del("instances.0.config.command.environment"), "instances[0].config.command.environment", "is required"},
	{"a size is negative", set("volumes.0.sizeBytes", -1.0), "volumes[0].sizeBytes", "out of range"},
	{"a vcpu count overflows 32 bits", set("instances.0.config.resources.vcpuCount", 4294967296.0), "instances[0].config.resources.vcpuCount", "out of range"},

	// Identifiers.
	{"a host id starts with a dash", set("hostId", "-host"), "hostId", "is not an identifier"},
	{"an app id has a dot", set("instances.0.appId", "web.app"), "instances[0].appId", "is not an identifier"},
	{"a volume id is 64 characters", set("volumes.1.volumeId", strings.Repeat("v", 64)), "volumes[1].volumeId", "is not an identifier"},
	{"a deployment id is empty", set("instances.0.deploymentId", ""), "instances[0].deploymentId", "is not an identifier"},
	{"a checkpoint id has a space", set("checkpoints.0.checkpointId", "c 1"), "checkpoints[0].checkpointId", "is not an identifier"},
	{"an export id has a slash", set("exports.0.exportId", "e/1"), "exports[0].exportId", "is not an identifier"},

	// Digests and object keys.
	{"a digest is uppercase", set("instances.0.layers.0.digest", strings.ToUpper(digest)), "instances[0].layers[0].digest", "is not a lowercase hex sha-256"},
	{"a digest is short", set("volumes.0.initialContents.digest", digest[:63]), "volumes[0].initialContents.digest", "is not a lowercase hex sha-256"},
	{"an object key is empty", set("instances.0.layers.0.objectKey", ""), "instances[0].layers[0].objectKey", "must not be empty"},
	{"an object key is 1025 characters", set("exports.0.objectKey", strings.Repeat("k", 1025)), "exports[0].objectKey", "at most 1024"},

	// Guest paths.
	{"a guest path is relative", set("instances.0.config.command.workingDirectory", "data"), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path has a .. segment", set("instances.0.config.command.workingDirectory", "/data/../etc"), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path has a . segment", set("volumes.0.initialContents.destinationPath", "/srv/."), "volumes[0].initialContents.destinationPath", "is not a guest path"},
	{"a guest path has an empty segment", set("instances.0.config.command.workingDirectory", "/data//x"), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path ends with a slash", set("instances.0.config.command.workingDirectory", "/data/"), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path has a backslash", set("instances.0.config.command.workingDirectory", `/da\ta`), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path has a quote", set("instances.0.config.command.workingDirectory", `/da"ta`), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path has an apostrophe", set("instances.0.config.command.workingDirectory", `/da'ta`), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path has a control character", set("instances.0.config.command.workingDirectory", "/da\tta"), "instances[0].config.command.workingDirectory", "is not a guest path"},
	{"a guest path is longer than 4096", set("instances.0.config.command.workingDirectory", "/"+strings.Repeat("a", 4096)), "instances[0].config.command.workingDirectory", "at most 4096"},
	{"a program is /", set("instances.0.config.command.program", "/"), "instances[0].config.command.program", "other than / and /sbin/init"},
	{"a program is /sbin/init", set("instances.0.config.command.program", "/sbin/init"), "instances[0].config.command.program", "other than / and /sbin/init"},
	{"an executable layer lands on /sbin/init", set("instances.0.layers.1.destinationPath", "/sbin/init"), "instances[0].layers[1].destinationPath", "other than / and /sbin/init"},
	{"an executable layer lands on /", set("instances.0.layers.1.destinationPath", "/"), "instances[0].layers[1].destinationPath", "other than / and /sbin/init"},
	{"an executable layer has no destination", del("instances.0.layers.1.destinationPath"), "instances[0].layers[1].destinationPath", "is required"},
	{"an image layer names a tag, not a digest", set("instances.0.layers.0", map[string]any{"kind": "image", "reference": "registry.example/web:1.4"}), "instances[0].layers[0].reference", "names no digest, so what runs could change under the same name; pin it: `skopeo inspect --format '{{.Digest}}' docker://registry.example/web:1.4` or `crane digest registry.example/web:1.4` prints the sha256, then write registry.example/web@sha256:<that digest>"},
	{"an image layer's digest is short", set("instances.0.layers.0", map[string]any{"kind": "image", "reference": "registry.example/web@sha256:abc"}), "instances[0].layers[0].reference", "is not sha256: and 64 lowercase hex digits"},
	{"an image layer has no reference", set("instances.0.layers.0", map[string]any{"kind": "image"}), "instances[0].layers[0].reference", "is required"},

	// Ports and port names.
	{"the http port is 0", set("instances.0.config.httpPort", 0.0), "instances[0].config.httpPort", "must be 1 to 65535"},
	{"the http port is 65536", set("instances.0.config.httpPort", 65536.0), "instances[0].config.httpPort", "must be 1 to 65535"},
	{"a guest port is 0", set("instances.0.config.ports.0.guestPort", 0.0), "instances[0].config.ports[0].guestPort", "must be 1 to 65535"},
	{"a guest port is 70000", set("instances.0.config.ports.0.guestPort", 70000.0), "instances[0].config.ports[0].guestPort", "must be 1 to 65535"},
	{"a port name is uppercase", set("instances.0.config.ports.0.name", "Admin"), "instances[0].config.ports[0].name", "is not lowercase letters"},
	{"a port name starts with a digit", set("instances.0.config.ports.0.name", "9admin"), "instances[0].config.ports[0].name", "is not lowercase letters"},
	{"a port name is 17 characters", set("instances.0.config.ports.0.name", "a"+strings.Repeat("b", 16)), "instances[0].config.ports[0].name", "is not lowercase letters"},
	{"a port is named http", set("instances.0.config.ports.0.name", "http"), "instances[0].config.ports[0].name", "already taken by the implicit http port"},
	{"two ports share a name", appendTo("instances.0.config.ports", `{"name": "admin", "guestPort": 9001}`), "instances[0].config.ports[1].name", "already taken by ports[0]"},
	{"a port reuses the http port", set("instances.0.config.ports.0.guestPort", 8080.0), "instances[0].config.ports[0].guestPort", "already taken by httpPort"},
	{"two ports share a guest port", appendTo("instances.0.config.ports", `{"name": "other", "guestPort": 9000}`), "instances[0].config.ports[1].guestPort", "already taken by ports[0]"},

	// Hostnames.
	{"a hostname is uppercase", set("instances.0.hostnames.0.hostname", "Web.example.com"), "instances[0].hostnames[0].hostname", "is not a hostname"},
	{"a hostname has one label", set("instances.0.hostnames.0.hostname", "localhost"), "instances[0].hostnames[0].hostname", "is not a hostname"},
	{"a hostname label starts with a dash", set("instances.0.hostnames.0.hostname", "-web.example.com"), "instances[0].hostnames[0].hostname", "is not a hostname"},
	{"a hostname is 254 characters", set("instances.0.hostnames.0.hostname", strings.Repeat(strings.Repeat("a", 62)+".", 4)+"abc"), "instances[0].hostnames[0].hostname", "at most 253"},
	{"a hostname label is 64 characters", set("instances.0.hostnames.0.hostname", strings.Repeat("a", 64)+".example.com"), "instances[0].hostnames[0].hostname", "is not a hostname"},
	{"a hostname label ends with a dash", set("instances.0.hostnames.0.hostname", "web-.example.com"), "instances[0].hostnames[0].hostname", "is not a hostname"},
	{"a hostname kind is unknown", set("instances.0.hostnames.0.kind", "vanity"), "instances[0].hostnames[0].kind", `is not one of "platform", "custom"`},

	// Sleep and activation.
	{"an idle timeout is under a minute", both(del("instances.1.activation"), set("instances.1.idleTimeoutMs", 59999.0)), "instances[1].idleTimeoutMs", "must be 60000 to 86400000"},
	{"an idle timeout is over a day", both(del("instances.1.activation"), set("instances.1.idleTimeoutMs", 86400001.0)), "instances[1].idleTimeoutMs", "must be 60000 to 86400000"},
	{"a traffic-idle timeout is under a minute", set("instances.1.activation.sleepWhen.timeoutMs", 1000.0), "instances[1].activation.sleepWhen.timeoutMs", "must be 60000 to 86400000"},
	{"a traffic-idle policy has no timeout", del("instances.1.activation.sleepWhen.timeoutMs"), "instances[1].activation.sleepWhen.timeoutMs", "is required"},
	{"a max lifetime is under a minute", set("instances.1.activation.sleepWhen", map[string]any{"kind": "max-lifetime", "ttlMs": 59999.0}), "instances[1].activation.sleepWhen.ttlMs", "must be 60000 to 604800000"},
	{"a max lifetime is over a week", set("instances.1.activation.sleepWhen", map[string]any{"kind": "max-lifetime", "ttlMs": 604800001.0}), "instances[1].activation.sleepWhen.ttlMs", "must be 60000 to 604800000"},
	{"a max-lifetime policy has no ttl", set("instances.1.activation.sleepWhen", map[string]any{"kind": "max-lifetime"}), "instances[1].activation.sleepWhen.ttlMs", "is required"},
	{"a sleep policy kind is unknown", set("instances.1.activation.sleepWhen.kind", "cron"), "instances[1].activation.sleepWhen.kind", "is not one of"},
	{"an activation names no sleepWhen", set("instances.1.activation", map[string]any{}), "instances[1].activation.sleepWhen", "is required"},
	{"activation comes with idleTimeoutMs", set("instances.1.idleTimeoutMs", 60000.0), "instances[1].activation", "refused beside idleTimeoutMs"},
	{"a running instance may sleep when idle", set("instances.1.desiredState", "running"), "instances[1].activation.sleepWhen.kind", `"traffic-idle" is refused on a running instance`},
	{"a stopped instance has a max lifetime", both(set("instances.1.desiredState", "stopped"), set("instances.1.activation.sleepWhen", map[string]any{"kind": "max-lifetime", "ttlMs": 60000.0})), "instances[1].activation.sleepWhen.kind", `"max-lifetime" is refused on a stopped instance`},

	// Layers.
	{"an instance has no layers", set("instances.0.layers", []any{}), "instances[0].layers", "has 0 items; it must have 1 to 8"},
	{"an instance has nine layers", set("instances.0.layers", layers(9)), "instances[0].layers", "has 9 items; it must have 1 to 8"},
	{"a layer kind is unknown", set("instances.0.layers.0.kind", "oci"), "instances[0].layers[0].kind", `is not one of "filesystem", "executable"`},
	{"a layer has no kind", del("instances.0.layers.0.kind"), "instances[0].layers[0].kind", "is required"},

	// Health checks.
	{"a health check kind is unknown", set("instances.0.config.healthCheck.kind", "grpc"), "instances[0].config.healthCheck.kind", `is not one of "http", "tcp", "boot-completed"`},
	{"a health check has no kind", del("instances.0.config.healthCheck.kind"), "instances[0].config.healthCheck.kind", "is required"},
	{"an http check has no path", del("instances.0.config.healthCheck.path"), "instances[0].config.healthCheck.path", "is required"},
	{"an http check path is relative", set("instances.0.config.healthCheck.path", "health"), "instances[0].config.healthCheck.path", "is not an HTTP request path"},
	{"a tcp check has no interval", both(set("instances.0.config.healthCheck.kind", "tcp"), del("instances.0.config.healthCheck.intervalMs")), "instances[0].config.healthCheck.intervalMs", "is required"},

	// Tenant arguments and environment.
	{"there are 65 arguments", set("instances.0.config.command.args", strs(65, "x")), "instances[0].config.command.args", "has 65 items; at most 64"},
	{"an argument is 4097 characters", set("instances.0.config.command.args", strs(1, strings.Repeat("x", 4097))), "instances[0].config.command.args[0]", "at most 4096"},
	{"an argument is a number", set("instances.0.config.command.args", []any{1.0}), "instances[0].config.command.args[0]", "must be a string"},
	{"an environment key starts with a digit", set("instances.0.config.command.environment.1FOO", "x"), "instances[0].config.command.environment.1FOO", "is not a variable name"},
	{"an environment key has a dash", set("instances.0.config.command.environment.FOO-BAR", "x"), "instances[0].config.command.environment.FOO-BAR", "is not a variable name"},
	{"an environment value is 32769 characters", set("instances.0.config.command.environment.BIG", strings.Repeat("x", 32769)), "instances[0].config.command.environment.BIG", "at most 32768"},
	{"an environment value refers to a secret", set("instances.0.config.command.environment.FOO", "key=$NIBRUN_SECRET"), "instances[0].config.command.environment.FOO", "refers to $NIBRUN_SECRET; only NIBRUN_HOSTNAME and NIBRUN_HTTP_PORT may be referenced"},
	{"an environment value refers to the data dir in braces", set("instances.0.config.command.environment.FOO", "${NIBRUN_DATA_DIR}/x"), "instances[0].config.command.environment.FOO", "refers to $NIBRUN_DATA_DIR"},
	{"an environment value refers to a longer name", set("instances.0.config.command.environment.FOO", "$NIBRUN_HOSTNAME_2"), "instances[0].config.command.environment.FOO", "refers to $NIBRUN_HOSTNAME_2"},
	{"an export's environment refers to NIBRUN_", set("exports.0.environment.A", "$NIBRUN_X"), "exports[0].environment.A", "refers to $NIBRUN_X"},
	{"an export's environment is a list", set("exports.0.environment", []any{}), "exports[0].environment", "must be an object"},

	// Presence and states.
	{"a volume's state is unknown", set("volumes.0.desiredState", "deleted"), "volumes[0].desiredState", `is not one of "present", "absent"`},
	{"an instance's state is unknown", set("instances.0.desiredState", "paused"), "instances[0].desiredState", `is not one of "running", "on-request", "stopped"`},
	{"a checkpoint's state is unknown", set("checkpoints.0.desiredState", "ready"), "checkpoints[0].desiredState", "is not one of"},
	{"an export's state is unknown", set("exports.0.desiredState", "ready"), "exports[0].desiredState", "is not one of"},

	// References and uniqueness.
	{"an instance's volume is not in the document", set("instances.0.volumeId", "v9"), "instances[0].volumeId", `"v9" is not one of this document's volumes`},
	{"an instance runs on another app's volume", set("instances.1.volumeId", "v1"), "instances[1].volumeId", `"v1" is app "web"'s volume (volumes[0].appId), not "api"'s: two guests writing one filesystem would corrupt it`},
	{"a volume names another app than its instance", set("volumes.1.appId", "web"), "instances[1].volumeId", `"v2" is app "web"'s volume (volumes[1].appId), not "api"'s: two guests writing one filesystem would corrupt it; give "api" a volume of its own, or, to hand this one over, set volumes[1].appId to "api" (and name it on no other instance)`},
	{"an export names another app than its volume's", set("exports.0.appId", "api"), "exports[0].appId", `"api" does not own volume "v1": volumes[0] is app "web"'s`},
	{"two apps name one hostname", set("instances.1.hostnames", []any{map[string]any{"hostname": "web.example.com", "kind": "custom"}}), "instances[1].hostnames[0].hostname", `"web.example.com" is already named by instances[0].hostnames[0] (app "web"): the proxy routes a hostname to one app`},
	{"an app names one hostname twice", appendTo("instances.0.hostnames", `{"hostname": "web.example.com", "kind": "platform"}`), "instances[0].hostnames[1].hostname", `"web.example.com" is already named by instances[0].hostnames[0]`},
	{"two instances share an app id", set("instances.1.appId", "web"), "instances[1].appId", `"web" is already used by instances[0]`},
	{"two volumes share a volume id", set("volumes.1.volumeId", "v1"), "volumes[1].volumeId", `"v1" is already used by volumes[0]`},
	{"two checkpoints share an id", appendTo("checkpoints", `{"checkpointId": "c1", "volumeId": "v2", "desiredState": "absent"}`), "checkpoints[1].checkpointId", `"c1" is already used by checkpoints[0]`},
	{"two exports share an id", appendTo("exports", `{"exportId": "e1", "appId": "api", "volumeId": "v2", "objectKey": "x", "desiredState": "absent"}`), "exports[1].exportId", `"e1" is already used by exports[0]`},
}

func TestEveryRuleRefusesTheWholeDocumentNamingPathAndRule(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			tree := parseTree(t, base)
			tc.mutate(tree)
			data, err := json.Marshal(tree)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Decode(data)
			if doc != nil || err == nil {
				t.Fatalf("accepted a document that breaks %q", tc.rule)
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error is %T, not a *Refusal: %v", err, err)
			}
			for _, reason := range r.Reasons {
				if reason.Path == tc.path && strings.Contains(reason.Rule, tc.rule) {
					return
				}
			}
			t.Fatalf("no reason at %s stating %q; got:\n%s", tc.path, tc.rule, strings.Join(lines(r), "\n"))
		})
	}
}

func lines(r *Refusal) []string {
	var out []string
	for _, reason := range r.Reasons {
		out = append(out, reason.String())
	}
	return out
}

func TestTheBaseDocumentAndEveryExampleAreAccepted(t *testing.T) {
	if _, err := Decode([]byte(base)); err != nil {
		t.Fatalf("base refused: %v", err)
	}
	for _, path := range examples(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(data); err != nil {
			t.Errorf("%s refused: %v", path, err)
		}
	}
}

func examples(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob("../../examples/desired*.json")
	if err != nil || len(paths) < 2 {
		t.Fatalf("examples/desired*.json: found %d (%v)", len(paths), err)
	}
	return paths
}

func TestATruncatedOrEmptyDocumentIsRefusedSayingHowToWriteOneWhole(t *testing.T) {
	for input, want := range map[string]string{
		base[:300]: "is not JSON: it ends after 300 bytes in the middle of a value",
		"":         "is empty",
		" \n":      "is empty",
	} {
		_, err := Decode([]byte(input))
		rs := Reasons(err)
		if len(rs) != 1 || !strings.HasPrefix(rs[0].Rule, want) || !strings.Contains(rs[0].Rule, "rename it into place") {
			t.Fatalf("%q: %v, want one reason starting %q and saying to rename a whole file into place", input, rs, want)
		}
	}
}

func TestADocumentSavedWithAByteOrderMarkIsRefusedSayingToSaveItWithout(t *testing.T) {
	_, err := Decode([]byte("\xef\xbb\xbf" + base))
	rs := Reasons(err)
	if len(rs) != 1 || !strings.Contains(rs[0].Rule, "starts with a UTF-8 byte order mark (EF BB BF)") || !strings.Contains(rs[0].Rule, "save it as UTF-8 without one") {
		t.Fatalf("%v, want one reason naming the byte order mark", rs)
	}
}

func TestADocumentOverTheSizeLimitIsRefusedBeforeItIsParsed(t *testing.T) {
	tree := parseTree(t, base)
	set("padding", strings.Repeat("x", MaxDocumentBytes))(tree)
	_, err := Decode(mustJSON(t, tree))
	rs := Reasons(err)
	if len(rs) != 1 || !strings.Contains(rs[0].Rule, "is larger than 16777216 bytes (16 MiB), the most that is read") {
		t.Fatalf("%v, want one reason naming the limit", rs)
	}
}

func TestAKeyGivenTwiceInOneObjectIsRefusedNamingItsPath(t *testing.T) {
	var env strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&env, `"V%d": "x", `, i)
	}
	cases := map[string]struct{ input, path string }{
		"a second instances list": {strings.Replace(base, `"checkpoints":`, `"instances": [], "checkpoints":`, 1), "instances"},
		"a nested field":          {strings.Replace(base, `"httpPort": 3000,`, `"httpPort": 3000, "httpPort": 3001,`, 1), "instances[1].config.httpPort"},
		"the same key escaped":    {strings.Replace(base, `"hostId": "host-1",`, `"hostId": "host-1", "host\u0049d": "host-2",`, 1), "hostId"},
		"a long environment":      {strings.Replace(base, `"environment": {}`, `"environment": {`+env.String()+`"V7": "y"}`, 1), "instances[1].config.command.environment.V7"},
	}
	for name, tc := range cases {
		doc, err := Decode([]byte(tc.input))
		rs := Reasons(err)
		if doc != nil || len(rs) != 1 || rs[0].Path != tc.path || !strings.Contains(rs[0].Rule, "is given twice in one object: name each key once") {
			t.Errorf("%s: %v, want one reason at %s", name, rs, tc.path)
		}
	}
	// The same key in two objects is no duplicate.
	if _, err := Decode([]byte(base)); err != nil {
		t.Fatal(err)
	}
}

func TestADocumentThatIsNotJSONIsRefusedSayingSo(t *testing.T) {
	for _, input := range []string{``, `{`, `{"hostId": "h"} {}`, `[]`, `"host"`, `null`, base + ` }`, base + `]`} {
		doc, err := Decode([]byte(input))
		if doc != nil || err == nil {
			t.Fatalf("%q accepted", input)
		}
		if len(Reasons(err)) != 1 {
			t.Fatalf("%q: want one reason, got %v", input, Reasons(err))
		}
	}
}

func TestEveryReasonIsReportedNotOnlyTheFirst(t *testing.T) {
	tree := parseTree(t, base)
	set("hostId", "-bad")(tree)
	set("instances.0.config.httpPort", 0.0)(tree)
	set("exports.0.exportId", "")(tree)
	data, _ := json.Marshal(tree)
	_, err := Decode(data)
	got := Reasons(err)
	want := []string{"hostId", "instances[0].config.httpPort", "exports[0].exportId"}
	if len(got) != len(want) {
		t.Fatalf("want %d reasons, got %v", len(want), got)
	}
	for i, p := range want {
		if got[i].Path != p {
			t.Errorf("reason %d at %s, want %s", i, got[i].Path, p)
		}
	}
	if !strings.Contains(err.Error(), "hostId: ") || !strings.Contains(err.Error(), "; instances[0].config.httpPort: ") {
		t.Errorf("the error does not name each path: %v", err)
	}
}

// optionalPaths are the JSON paths that may be absent; every other key of
// an accepted document is required.
var optionalPaths = regexp.MustCompile(`^(\$schema|volumes\[\d+\]\.initialContents|instances\[\d+\]\.(idleTimeoutMs|activation)|instances\[\d+\]\.layers\[\d+\]\.sizeBytes|instances\[\d+\]\.config\.ports|exports\[\d+\]\.environment)$`)

func TestDroppingAnyRequiredKeyRefusesAndDroppingAnOptionalOneDoesNot(t *testing.T) {
	docs := []string{base}
	for _, path := range examples(t) {
		data, _ := os.ReadFile(path)
		docs = append(docs, string(data))
	}
	for _, doc := range docs {
		tree := parseTree(t, doc)
		for _, key := range keyPaths(tree, "", "") {
			copyTree := parseTree(t, doc)
			del(key.dotted)(copyTree)
			data, _ := json.Marshal(copyTree)
			_, err := Decode(data)
			if optionalPaths.MatchString(key.json) {
				if err != nil {
					t.Errorf("dropping optional %s refused the document: %v", key.json, err)
				}
				continue
			}
			found := false
			for _, r := range Reasons(err) {
				found = found || (r.Path == key.json && r.Rule == "is required")
			}
			if !found {
				t.Errorf("dropping %s: want %q at it, got %v", key.json, "is required", Reasons(err))
			}
		}
	}
}

type keyPath struct{ dotted, json string }

// keyPaths lists every object key in tree, both as a path for del and as
// the JSON path a reason names.
func keyPaths(tree any, dotted, jsonPath string) []keyPath {
	var out []keyPath
	switch v := tree.(type) {
	case map[string]any:
		for k, child := range v {
			d, j := k, k
			if dotted != "" {
				d, j = dotted+"."+k, jsonPath+"."+k
			}
			// Keys inside a map type (environment) are names, not fields.
			if strings.HasSuffix(jsonPath, "environment") {
				continue
			}
			out = append(out, keyPath{d, j})
			out = append(out, keyPaths(child, d, j)...)
		}
	case []any:
		for i, child := range v {
			out = append(out, keyPaths(child, fmt.Sprintf("%s.%d", dotted, i), fmt.Sprintf("%s[%d]", jsonPath, i))...)
		}
	}
	return out
}

func TestUnknownPropertiesAreIgnoredAndNullIsAbsent(t *testing.T) {
	tree := parseTree(t, base)
	set("futureField", map[string]any{"x": 1.0})(tree)
	set("instances.0.colour", "blue")(tree)
	set("instances.0.idleTimeoutMs", nil)(tree)
	set("instances.0.activation", nil)(tree)
	set("volumes.0.initialContents", nil)(tree)
	set("instances.0.config.ports", nil)(tree)
	set("exports.0.environment", nil)(tree)
	// A filesystem layer's destinationPath is not its kind's: ignored.
	set("instances.0.layers.0.destinationPath", 7.0)(tree)
	data, _ := json.Marshal(tree)
	doc, err := Decode(data)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	in := doc.Instances[0]
	if in.IdleTimeoutMs != nil || in.Activation != nil || doc.Volumes[0].InitialContents != nil || in.Config.Ports != nil {
		t.Fatalf("null did not read as absent: %+v", in)
	}
	if doc.Exports[0].Environment != nil {
		t.Fatalf("a null export environment must stay unknown (nil), got %v", doc.Exports[0].Environment)
	}
}

func TestAnEmptyExportEnvironmentIsKnownToHoldNoVariables(t *testing.T) {
	tree := parseTree(t, base)
	set("exports.0.environment", map[string]any{})(tree)
	data, _ := json.Marshal(tree)
	doc, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if env := doc.Exports[0].Environment; env == nil || len(env) != 0 {
		t.Fatalf("{} must decode to an empty, non-nil environment, got %#v", env)
	}
}

func TestDecodingFillsEveryField(t *testing.T) {
	doc, err := Decode([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	web := doc.Instances[0]
	if web.Layers[1].Kind != LayerExecutable || web.Layers[1].DestinationPath != "/usr/bin/web" {
		t.Errorf("executable layer: %+v", web.Layers[1])
	}
	hc := web.Config.HealthCheck
	want := HealthCheck{Kind: HealthHTTP, Path: "/health", IntervalMs: 1000, TimeoutMs: 500, GracePeriodMs: 5000, HealthyThreshold: 1, UnhealthyThreshold: 3}
	if hc != want {
		t.Errorf("health check %+v, want %+v", hc, want)
	}
	if web.Config.Command.Environment["URL"] != "https://${NIBRUN_HOSTNAME}:$NIBRUN_HTTP_PORT/" {
		t.Errorf("environment not kept as is: %v", web.Config.Command.Environment)
	}
	if web.Config.RestartPolicy.BackoffFactor != 2 || web.Config.Ports[0] != (InstancePort{Name: "admin", GuestPort: 9000}) {
		t.Errorf("config: %+v", web.Config)
	}
	if doc.Volumes[0].InitialContents.DestinationPath != "/srv" {
		t.Errorf("initial contents: %+v", doc.Volumes[0].InitialContents)
	}
}

func TestAnAcceptedDocumentSurvivesARoundTripThroughJSON(t *testing.T) {
	for _, path := range examples(t) {
		data, _ := os.ReadFile(path)
		roundTrip(t, data)
	}
	roundTrip(t, []byte(base))
}

func roundTrip(t testing.TB, data []byte) {
	t.Helper()
	first, err := Decode(data)
	if err != nil {
		return
	}
	again, err := json.Marshal(first)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	second, err := Decode(again)
	if err != nil {
		t.Fatalf("an accepted document, re-encoded, was refused: %v\n%s", err, again)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("round trip changed the document:\n%+v\n%+v", first, second)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTheDigestOfADocumentIsItsSha256InLowercaseHex(t *testing.T) {
	// sha256("") is well known.
	if got := DigestOf(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("got %s", got)
	}
	if rules[reflect.TypeFor[Sha256Digest]()].checkString(string(DigestOf([]byte(base)))) != "" {
		t.Fatal("a digest does not pass the Sha256Digest rule")
	}
}

// An image layer needs only its pinned reference: the digest and object
// key of the seed's two kinds are not asked of it, and the layer's content
// digest is the one its reference names.
func TestAnImageLayerIsPinnedByItsReferenceAlone(t *testing.T) {
	tree := parseTree(t, base)
	ref := "registry.example:5000/team/web@sha256:" + digest
	set("instances.0.layers.0", map[string]any{"kind": "image", "reference": ref})(tree)
	data, _ := json.Marshal(tree)
	doc, err := Decode(data)
	if err != nil {
		t.Fatalf("a document with an image layer was refused: %v", err)
	}
	l := doc.Instances[0].Layers[0]
	if l.Kind != LayerImage || string(l.Reference) != ref || l.ContentDigest() != digest {
		t.Errorf("decoded %+v, content digest %q", l, l.ContentDigest())
	}
	if f := doc.Instances[0].Layers[1]; f.ContentDigest() != string(f.Digest) {
		t.Errorf("a seed layer's content digest is %q, not its digest %q", f.ContentDigest(), f.Digest)
	}
}
