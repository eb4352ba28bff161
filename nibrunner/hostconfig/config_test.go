package hostconfig

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"alpnib.dev/nibrunner/desired"
)

func readFull(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t *testing.T, data []byte) *Config {
	t.Helper()
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	return c
}

func reasons(t *testing.T, data []byte) []string {
	t.Helper()
	_, err := Parse(data)
	var inv *Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("want *Invalid, got %v", err)
	}
	return inv.Reasons
}

func wantReason(t *testing.T, data []byte, want string) {
	t.Helper()
	got := reasons(t, data)
	for _, r := range got {
		if strings.Contains(r, want) {
			return
		}
	}
	t.Fatalf("no reason says %q; got %q", want, got)
}

func TestTheFullExampleLoadsWithEverySectionParsed(t *testing.T) {
	c := mustParse(t, readFull(t))
	if c.Artifacts.Store != (Store{Kind: StoreS3, Bucket: "nib-artifacts", Prefix: "prod/layers"}) {
		t.Errorf("artifacts store: %+v", c.Artifacts.Store)
	}
	if c.Exports.Store != (Store{Kind: StoreS3, Bucket: "nib-exports"}) {
		t.Errorf("exports store: %+v", c.Exports.Store)
	}
	if !slices.Equal(c.Network.DeniedV4, []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.7/32")}) ||
		!slices.Equal(c.Network.DeniedV6, []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")}) {
		t.Errorf("denied: %v %v", c.Network.DeniedV4, c.Network.DeniedV6)
	}
	if c.Proxy.HTTP == nil || c.Proxy.HTTP.TLS == nil || c.Proxy.HTTP.Port != 443 || c.Proxy.Raw == nil || c.Metrics == nil || c.Metrics.Port != 9464 {
		t.Errorf("optional sections: %+v %+v", c.Proxy, c.Metrics)
	}
	if got := c.Limits(); got != (desired.HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7, NoImages: true}) {
		t.Errorf("limits: %+v", got)
	}
}

func TestThePublishedExampleIsTheTestedOne(t *testing.T) {
	ex, err := os.ReadFile("../../examples/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, ex)
	if h := c.Proxy.HTTP; h.H2C || h.MaxBackendConnectionsPerApp != 512 {
		t.Errorf("proxy.http: h2c %v, max_backend_connections_per_app %d", h.H2C, h.MaxBackendConnectionsPerApp)
	}
}

func TestTheDefaultConfigurationLoadsWithNoProxyAndLocalStores(t *testing.T) {
	for _, root := range []string{"", "/", "/tmp/some root"} {
		c := mustParse(t, Default(root))
		if c.Proxy.HTTP != nil || c.Proxy.Raw != nil || c.Metrics != nil {
			t.Errorf("root %q: the default has a proxy or metrics: %+v", root, c)
		}
		if c.Artifacts.Store.Kind != StoreDir || c.Exports.Store.Kind != StoreDir || c.Volumes.Backend != "local-file" {
			t.Errorf("root %q: stores %+v %+v", root, c.Artifacts.Store, c.Exports.Store)
		}
		if got := c.Limits(); got != (desired.HostLimits{NoImages: true}) {
			t.Errorf("root %q: limits %+v", root, got)
		}
		want := filepath.Clean(root)
		if want == "." {
			want = "/"
		}
		for _, d := range append(Folders(c), c.Paths.DesiredStateFile) {
			if !strings.HasPrefix(d, want) {
				t.Errorf("root %q: %s is not under it", root, d)
			}
		}
	}
}

// leafKeys lists every key path of a TOML tree that holds a value.
func leafKeys(tree map[string]any, prefix string) []string {
	var out []string
	for k, v := range tree {
		key := dotted(prefix, k)
		if sub, ok := v.(map[string]any); ok {
			out = append(out, leafKeys(sub, key)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

func deleteKey(tree map[string]any, key string) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		tree = tree[p].(map[string]any)
	}
	delete(tree, parts[len(parts)-1])
}

func treeOf(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var tree map[string]any
	if err := toml.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	return tree
}

func render(t *testing.T, tree map[string]any) []byte {
	t.Helper()
	data, err := toml.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEveryMissingKeyIsRefusedByName(t *testing.T) {
	full := readFull(t)
	keys := leafKeys(treeOf(t, full), "")
	if len(keys) < 20 {
		t.Fatalf("only %d keys found", len(keys))
	}
	for _, key := range keys {
		tree := treeOf(t, full)
		deleteKey(tree, key)
		got := reasons(t, render(t, tree))
		if !slices.Contains(got, "missing key "+key) {
			t.Errorf("without %s: got %q", key, got)
		}
	}
}

func TestAMissingRequiredSectionIsRefusedByName(t *testing.T) {
	for _, section := range []string{"paths", "artifacts", "volumes", "exports", "network"} {
		tree := treeOf(t, readFull(t))
		delete(tree, section)
		wantReason(t, render(t, tree), "missing section ["+section+"]")
	}
}

func TestWholeOptionalSectionsMayBeAbsent(t *testing.T) {
	for _, section := range []string{"proxy.http.tls", "proxy.http", "proxy.raw", "proxy", "metrics"} {
		tree := treeOf(t, readFull(t))
		deleteKey(tree, section)
		c := mustParse(t, render(t, tree))
		switch section {
		case "proxy.http.tls":
			if c.Proxy.HTTP == nil || c.Proxy.HTTP.TLS != nil {
				t.Errorf("without [%s]: %+v", section, c.Proxy.HTTP)
			}
		case "metrics":
			if c.Metrics != nil {
				t.Errorf("without [metrics]: %+v", c.Metrics)
			}
		}
	}
}

func TestUnknownKeysAreRefusedByNameWithTheKeyTheyWereMeantToBe(t *testing.T) {
	cases := map[string]string{
		"colour":                  "unknown key colour: the keys of the top level are max_apps,",
		"paths.cache_dir":         "unknown key paths.cache_dir",
		"proxy.http.tls.chain":    "unknown key proxy.http.tls.chain: the keys of [proxy.http.tls] are certificate, key",
		"proxy.grpc":              "unknown key proxy.grpc",
		"paths.state_directory":   "unknown key paths.state_directory: did you mean paths.state_dir?",
		"metrics.listen_adress":   "unknown key metrics.listen_adress: did you mean metrics.listen_address?",
		"max_concurrent_vm_start": "unknown key max_concurrent_vm_start: did you mean max_concurrent_vm_starts?",
	}
	for key, want := range cases {
		tree := treeOf(t, readFull(t))
		parts := strings.Split(key, ".")
		m := tree
		for _, p := range parts[:len(parts)-1] {
			m = m[p].(map[string]any)
		}
		m[parts[len(parts)-1]] = "x"
		wantReason(t, render(t, tree), want)
	}
}

func TestBadValuesAreRefusedSayingWhatTheyMustBe(t *testing.T) {
	cases := []struct {
		key  string
		val  any
		want string
	}{
		{"max_apps", int64(0), "max_apps is 0; it must be 1 to 5567"},
		{"max_apps", int64(5568), "max_apps is 5568"},
		{"max_apps", "many", "max_apps must be an integer"},
		{"max_concurrent_vm_starts", int64(-1), "max_concurrent_vm_starts is -1; it must be 1 to 256"},
		{"max_concurrent_vm_starts", int64(257), "max_concurrent_vm_starts is 257"},
		{"max_concurrent_vm_starts", "two", "max_concurrent_vm_starts must be an integer"},
		{"layer_cache_bytes", int64(-1), "layer_cache_bytes is -1"},
		{"paths.state_dir", "var/lib", "paths.state_dir is \"var/lib\"; it must be an absolute path"},
		{"paths.desired_state_file", int64(1), "paths.desired_state_file must be a string"},
		{"paths", "here", "paths must be a section"},
		{"artifacts.store_url", "bucket/prefix", "must be s3://bucket/prefix or an absolute path"},
		{"artifacts.store_url", "s3://Bad_Bucket/x", "is not an S3 bucket name"},
		{"exports.store_url", "s3://", "is not an S3 bucket name"},
		{"volumes.backend", "lvm", "the only backend is \"local-file\""},
		{"network.denied_egress_addresses_v4", []any{"10.0.0.0/33"}, "network.denied_egress_addresses_v4[0] is \"10.0.0.0/33\"; it must be a CIDR"},
		{"network.denied_egress_addresses_v4", []any{"2001:db8::/32"}, "must be an IPv4 CIDR"},
		{"network.denied_egress_addresses_v6", []any{"10.0.0.0/8"}, "must be an IPv6 CIDR"},
		{"network.denied_egress_addresses_v6", []any{int64(1)}, "network.denied_egress_addresses_v6[0] must be a string"},
		{"network.denied_egress_addresses_v4", "10.0.0.0/8", "must be a list of strings"},
		{"proxy.http.port", int64(0), "proxy.http.port is 0; it must be 1 to 65535"},
		{"proxy.http.port", "443", "proxy.http.port must be an integer"},
		{"proxy.http.listen_address", "example.com", "must be an IP address"},
		{"proxy.http.tls.key", "privkey.pem", "proxy.http.tls.key is \"privkey.pem\"; it must be an absolute path"},
		{"proxy.raw.max_ports_per_guest", int64(0), "max_ports_per_guest is 0; it must be 1 to 7"},
		{"proxy.raw.max_ports_per_guest", int64(8), "max_ports_per_guest is 8; it must be 1 to 7"},
		{"proxy.http.body_timeout_ms", int64(99), "proxy.http.body_timeout_ms is 99; it must be 100 to 3600000"},
		{"proxy.http.send_timeout_ms", int64(3600001), "proxy.http.send_timeout_ms is 3600001; it must be 100 to 3600000"},
		{"proxy.http.max_connections", int64(-1), "proxy.http.max_connections is -1; it must be 1 to 1000000"},
		{"proxy.http.max_connections_per_client", int64(1000001), "proxy.http.max_connections_per_client is 1000001"},
		{"proxy.http.max_backend_connections_per_app", int64(-1), "proxy.http.max_backend_connections_per_app is -1; it must be 1 to 1000000"},
		{"proxy.raw.tcp_idle_timeout_ms", int64(999), "proxy.raw.tcp_idle_timeout_ms is 999; it must be 1000 to 86400000"},
		{"proxy.raw.max_tcp_connections", int64(-5), "proxy.raw.max_tcp_connections is -5; it must be 1 to 1000000"},
		{"proxy.raw.max_tcp_connections_per_client", int64(-1), "proxy.raw.max_tcp_connections_per_client is -1; it must be 1 to 1000000"},
		{"proxy.raw.max_tcp_connections_per_client", int64(5000), "proxy.raw.max_tcp_connections_per_client is 5000, more than proxy.raw.max_tcp_connections (4096)"},
		{"proxy.raw.max_tcp_connections_per_app", int64(4097), "proxy.raw.max_tcp_connections_per_app is 4097, more than proxy.raw.max_tcp_connections (4096)"},
		{"proxy.raw.udp_queue_bytes_per_port", int64(1024), "proxy.raw.udp_queue_bytes_per_port is 1024; it must be 65536 to 1073741824 (a waking app's queued datagrams"},
		{"proxy.raw.max_udp_flows_per_client", int64(5000), "proxy.raw.max_udp_flows_per_client is 5000; it must be 1 to 4096 (the UDP flows one port keeps from one address"},
		{"metrics.port", int64(70000), "metrics.port is 70000"},
		{"metrics.port", int64(443), "metrics.port 443 is also proxy.http.port"},
	}
	for _, tc := range cases {
		wantReason(t, render(t, withValue(t, tc.key, tc.val)), tc.want)
	}
}

func TestAnOptionalSettingWrittenAsZeroOrEmptyIsRefusedNotTakenAsItsDefault(t *testing.T) {
	cases := []struct {
		key  string
		val  any
		want string
	}{
		{"max_concurrent_vm_starts", int64(0), "max_concurrent_vm_starts is 0; leave the key out for its default, or give it a value"},
		{"layer_cache_bytes", int64(0), "layer_cache_bytes is 0; leave the key out"},
		{"paths.desired_state_poll_ms", int64(0), "paths.desired_state_poll_ms is 0; leave the key out"},
		{"paths.reported_state_url", "", "paths.reported_state_url is empty; leave the key out for its default"},
		{"checkpoints.store_url", "", "checkpoints.store_url is empty; leave the key out"},
		{"checkpoints.freeze_timeout_ms", int64(0), "checkpoints.freeze_timeout_ms is 0; leave the key out"},
		{"checkpoints.max_concurrent", int64(0), "checkpoints.max_concurrent is 0; leave the key out"},
		{"proxy.http.body_timeout_ms", int64(0), "proxy.http.body_timeout_ms is 0; leave the key out"},
		{"proxy.http.max_connections_per_client", int64(0), "proxy.http.max_connections_per_client is 0; leave the key out"},
		{"proxy.http.max_backend_connections_per_app", int64(0), "proxy.http.max_backend_connections_per_app is 0; leave the key out"},
		{"proxy.raw.udp_queue_bytes_per_port", int64(0), "proxy.raw.udp_queue_bytes_per_port is 0; leave the key out"},
		{"proxy.raw.max_tcp_connections_per_app", int64(0), "proxy.raw.max_tcp_connections_per_app is 0; leave the key out"},
	}
	for _, tc := range cases {
		wantReason(t, render(t, withValue(t, tc.key, tc.val)), tc.want)
	}
}

func TestAConfigurationFileOverOneMiBIsRefusedUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	data := append(readFull(t), []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n")...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+" is refused: is larger than 1048576 bytes (1 MiB)") {
		t.Fatalf("%v, want the file refused for its size", err)
	}
}

func TestATOMLSyntaxErrorNamesTheLine(t *testing.T) {
	wantReason(t, []byte("max_apps = 1\n[paths\n"), "is not TOML: line 2")
}

func TestEveryReasonIsGivenAtOnce(t *testing.T) {
	tree := treeOf(t, readFull(t))
	deleteKey(tree, "paths.state_dir")
	deleteKey(tree, "volumes.backend")
	tree["extra"] = "x"
	got := reasons(t, render(t, tree))
	if len(got) != 3 {
		t.Fatalf("want 3 reasons, got %q", got)
	}
}

func TestLoadReadsTheFileAndNamesItWhenRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(good, readFull(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("max_apps = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(good); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad)
	if err == nil || !strings.HasPrefix(err.Error(), bad+" is refused: missing section [paths]") {
		t.Fatalf("got %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none.toml")); err == nil || !strings.Contains(err.Error(), "reading the host configuration") {
		t.Fatalf("got %v", err)
	}
}

func TestNIBRUNNER_CONFIGNamesTheFileToRead(t *testing.T) {
	t.Setenv(EnvVar, "")
	if Path() != DefaultPath {
		t.Fatalf("Path() = %s without the variable", Path())
	}
	t.Setenv(EnvVar, "/srv/nib.toml")
	if Path() != "/srv/nib.toml" {
		t.Fatalf("Path() = %s", Path())
	}
}

func TestCheckpointSettingsDefaultToTheArtifactStoreATenSecondFreezeAndTwoJobsAtATime(t *testing.T) {
	c := mustParse(t, readFull(t))
	cp := c.Checkpoints
	if cp.StoreURL != c.Artifacts.StoreURL || cp.Store != c.Artifacts.Store || cp.FreezeTimeoutMs != 10000 || cp.MaxConcurrent != 2 {
		t.Errorf("[checkpoints] left out gives %+v", cp)
	}
}

func TestCheckpointSettingsAreReadWhenGivenAndRefusedByNameWhenWrong(t *testing.T) {
	c := mustParse(t, append(readFull(t), "\n[checkpoints]\nstore_url = \"s3://nib-ckpt/host-1\"\nfreeze_timeout_ms = 2000\n"...))
	if c.Checkpoints.Store != (Store{Kind: StoreS3, Bucket: "nib-ckpt", Prefix: "host-1"}) || c.Checkpoints.FreezeTimeoutMs != 2000 || c.Checkpoints.MaxConcurrent != 2 {
		t.Errorf("[checkpoints] gives %+v", c.Checkpoints)
	}
	for body, want := range map[string]string{
		"freeze_timeout_ms = 5":    "checkpoints.freeze_timeout_ms is 5; it must be 100 to 600000",
		"max_concurrent = 100":     "checkpoints.max_concurrent is 100; it must be 1 to 64",
		"max_concurrent = \"two\"": "checkpoints.max_concurrent must be an integer",
		"store_url = \"here\"":     "checkpoints.store_url is \"here\"; it must be s3://bucket/prefix or an absolute path",
		"retries = 3":              "unknown key checkpoints.retries",
	} {
		wantReason(t, append(readFull(t), "\n[checkpoints]\n"+body+"\n"...), want)
	}
}

func TestScheduledCheckpointsDefaultToDailyKeepingSevenWithAVolumesOwnSectionOverridingThem(t *testing.T) {
	c := mustParse(t, readFull(t))
	if sc := c.Checkpoints.Schedule; sc.IntervalMs != 86400000 || sc.Keep != 7 || sc.Disabled || len(sc.Volumes) != 0 {
		t.Errorf("[checkpoints.schedule] left out gives %+v", sc)
	}
	c = mustParse(t, append(readFull(t), "\n[checkpoints.schedule]\nkeep = 3\ndisabled = true\n[checkpoints.schedule.volumes.blog-data]\ninterval_ms = 3600000\n[checkpoints.schedule.volumes.scratch]\ndisabled = true\n"...))
	sc := c.Checkpoints.Schedule
	if sc.IntervalMs != 86400000 || sc.Keep != 3 || !sc.Disabled ||
		sc.Volumes["blog-data"] != (VolumeSchedule{IntervalMs: 3600000}) || sc.Volumes["scratch"] != (VolumeSchedule{Disabled: true}) {
		t.Errorf("[checkpoints.schedule] gives %+v", sc)
	}
	for body, want := range map[string]string{
		"[checkpoints.schedule]\ninterval_ms = 1000":      "checkpoints.schedule.interval_ms is 1000; it must be 60000 (a minute) to 2678400000 (31 days)",
		"[checkpoints.schedule]\nkeep = 5000":             "checkpoints.schedule.keep is 5000; it must be 1 to 1000",
		"[checkpoints.schedule]\nkeep = 0":                "checkpoints.schedule.keep is 0; leave the key out",
		"[checkpoints.schedule]\ndisabled = \"yes\"":      "checkpoints.schedule.disabled must be true or false",
		"[checkpoints.schedule.volumes.blog]\nkeep = -1":  "checkpoints.schedule.volumes.blog.keep is -1; it must be 1 to 1000",
		"[checkpoints.schedule.volumes.blog]\nkept = 3":   "unknown key checkpoints.schedule.volumes.blog.kept: did you mean checkpoints.schedule.volumes.blog.keep?",
		"[checkpoints.schedule.volumes.\"-x\"]\nkeep = 3": "[checkpoints.schedule.volumes.-x] names no volume",
		"[checkpoints.schedule]\nvolumes = 3":             "checkpoints.schedule.volumes must hold sections",
	} {
		wantReason(t, append(readFull(t), "\n"+body+"\n"...), want)
	}
}

func TestJailSettingsDefaultWhenLeftOutAndAreRefusedByNameWhenWrong(t *testing.T) {
	c := mustParse(t, readFull(t))
	if c.Jail != (Jail{UIDBase: 900000, GIDBase: 900000, GuestsCPUWeight: 100}) {
		t.Errorf("[jail] left out gives %+v", c.Jail)
	}
	c = mustParse(t, append(readFull(t), "\n[jail]\nuid_base = 500000\ngid_base = 600000\nguests_cpu_weight = 50\n"...))
	if c.Jail != (Jail{UIDBase: 500000, GIDBase: 600000, GuestsCPUWeight: 50}) || c.JailRange().Count != MaxApps {
		t.Errorf("[jail] gives %+v", c.Jail)
	}
	for body, want := range map[string]string{
		"uid_base = -5":             "jail.uid_base is -5; it must be 1 to",
		"gid_base = 2147483000":     "jail.gid_base is 2147483000; it must be 1 to",
		"guests_cpu_weight = 20000": "jail.guests_cpu_weight is 20000; it must be 1 to 10000",
		"uid_base = 0":              "jail.uid_base is 0; leave the key out",
		"enabled = false":           "unknown key jail.enabled",
	} {
		wantReason(t, append(readFull(t), "\n[jail]\n"+body+"\n"...), want)
	}
}

// withPaths is the full example with desired_state_file replaced by lines.
func withPaths(t *testing.T, lines string) []byte {
	t.Helper()
	return []byte(strings.Replace(string(readFull(t)), `desired_state_file = "/srv/control/desired.json"`, lines, 1))
}

func TestAFleetHostReadsItsDocumentFromS3AndWritesItsReportThere(t *testing.T) {
	c := mustParse(t, withPaths(t, `desired_state_file = "s3://fleet/hosts/h1/desired.json"
reported_state_url = "s3://fleet/hosts/h1/reported.json"
desired_state_poll_ms = 2000`))
	if c.Paths.DesiredStateFile != "s3://fleet/hosts/h1/desired.json" || c.Paths.ReportedStateURL != "s3://fleet/hosts/h1/reported.json" || c.Paths.DesiredStatePollMs != 2000 {
		t.Fatalf("paths %+v", c.Paths)
	}
	if slices.ContainsFunc(Folders(c), func(d string) bool { return strings.HasPrefix(d, "s3:") }) {
		t.Fatalf("install would make a folder of an S3 URL: %q", Folders(c))
	}
	c = mustParse(t, readFull(t))
	if c.Paths.ReportedStateURL != "" || c.Paths.DesiredStatePollMs != DefaultDesiredStatePollMs {
		t.Fatalf("left out: %+v", c.Paths)
	}
	for lines, want := range map[string]string{
		`desired_state_file = "s3://fleet/"`:                                 `paths.desired_state_file is "s3://fleet/"; it must name an object, s3://bucket/key`,
		`desired_state_file = "s3://Fleet/d.json"`:                           `its bucket "Fleet" is not an S3 bucket name`,
		"desired_state_file = \"/d.json\"\nreported_state_url = \"/r.json\"": `paths.reported_state_url is "/r.json"; it must be s3://bucket/key`,
		"desired_state_file = \"/d.json\"\ndesired_state_poll_ms = 5":        "paths.desired_state_poll_ms is 5; it must be 100 to 3600000",
		"desired_state_file = \"/d.json\"\nreported_state_url = 3":           "paths.reported_state_url must be a string",
	} {
		wantReason(t, withPaths(t, lines), want)
	}
}

// withValue is the full example configuration with the dotted key set to
// val, its sections made when the example has none.
func withValue(t *testing.T, key string, val any) map[string]any {
	t.Helper()
	tree := treeOf(t, readFull(t))
	parts := strings.Split(key, ".")
	m := tree
	for _, p := range parts[:len(parts)-1] {
		if m[p] == nil {
			m[p] = map[string]any{}
		}
		m = m[p].(map[string]any)
	}
	m[parts[len(parts)-1]] = val
	return tree
}
