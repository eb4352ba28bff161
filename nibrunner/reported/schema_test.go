package reported

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"alpnib.dev/nibrunner/desired"
)

var update = flag.Bool("update", false, "rewrite the published schema")

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

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaPath, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, report HostReportedState) error {
	t.Helper()
	data, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func sample() HostReportedState {
	now := time.Date(2026, 11, 29, 15, 4, 5, 0, time.UTC)
	exit := 137
	return HostReportedState{
		HostId: "host-1", ReportedAt: now, State: HostReady,
		Capacity:       Resources{VcpuCount: 8, MemoryMib: 16384, CacheBytes: 10 << 30},
		Allocatable:    Resources{VcpuCount: 6, MemoryMib: 15360, CacheBytes: 9 << 30},
		Versions:       Versions{Agent: "0.1.0", GuestImage: "6.1.0-28-cloud-amd64+1", Vmm: "qemu 7.2.15"},
		AcceptedDigest: desired.Sha256Digest(strings.Repeat("ab", 32)),
		Volumes: []Volume{
			{VolumeId: "blog-data", AppId: "blog", State: VolumeReady, SizeBytes: 1 << 30, DevicePath: "/var/lib/nibrunner/volumes/blog-data.ext4",
				Usage: &Usage{TotalBytes: 1 << 30, UsedBytes: 12 << 20, MeasuredAt: now}},
			{VolumeId: "old", AppId: "old", State: VolumeDeleted, SizeBytes: 1 << 20},
		},
		Instances: []Instance{
			{AppId: "blog", DeploymentId: "blog-1", State: InstanceRunning, RestartCount: 1, HostPort: 21000, GuestIpv4: "10.201.0.2",
				LayerDigests: []desired.Sha256Digest{desired.Sha256Digest(strings.Repeat("0", 64))},
				StartedAt:    &now, LastHealthyAt: &now, ConvergedAt: &now, LastExitCode: &exit,
				Compute: &Compute{MemoryTotalBytes: 256 << 20, MemoryUsedBytes: 80 << 20, CpuShare: 0.05, MeasuredAt: now},
				Meters:  &Meters{RunningMs: 60000, IdleMs: 0, CpuMs: 1200, RxBytes: 4096, TxBytes: 8192}},
			{AppId: "wiki", DeploymentId: "wiki-42", State: InstancePending, Message: "waiting to be started: its host is 256 MiB short of the memory it needs"},
		},
		Checkpoints: []Checkpoint{{CheckpointId: "c1", VolumeId: "blog-data", State: CheckpointReady, Reference: "checkpoints/blog-data/c1.img", ReadyAt: &now}},
		Exports:     []Export{{ExportId: "e1", State: ExportPreparing}},
	}
}

func TestAFullReportAndAnEmptyOneValidateAgainstTheSchema(t *testing.T) {
	s := compile(t)
	if err := validate(t, s, sample()); err != nil {
		t.Fatalf("full report: %v", err)
	}
	empty := HostReportedState{HostId: "h", State: HostRegistering, Volumes: []Volume{}, Instances: []Instance{}, Checkpoints: []Checkpoint{}, Exports: []Export{}}
	if err := validate(t, s, empty); err != nil {
		t.Fatalf("empty report: %v", err)
	}
}

func TestTheSchemaRefusesAStatusWordNobodyDefined(t *testing.T) {
	s := compile(t)
	r := sample()
	r.Instances[0].State = "sleeping"
	if err := validate(t, s, r); err == nil {
		t.Fatal("an unknown instance state validated")
	}
	r = sample()
	r.HostId = "-bad"
	if err := validate(t, s, r); err == nil {
		t.Fatal("a bad host id validated")
	}
}

func TestOptionalFieldsAreOmittedNotWrittenEmpty(t *testing.T) {
	r := HostReportedState{HostId: "h", State: HostReady, Instances: []Instance{{AppId: "a", DeploymentId: "d", State: InstanceStopped}}}
	data, _ := json.Marshal(r)
	for _, absent := range []string{"acceptedDigest", "message", "hostPort", "startedAt", "compute", "meters", "lastExitCode", "layerDigests"} {
		if bytes.Contains(data, []byte(`"`+absent+`"`)) {
			t.Errorf("%s written although unset: %s", absent, data)
		}
	}
}

func TestALongMessageIsCutTo512Characters(t *testing.T) {
	long := strings.Repeat("é", 600)
	got := Truncate(long)
	if n := len([]rune(got)); n != MaxMessageLen || !strings.HasSuffix(got, "…") {
		t.Fatalf("got %d characters", n)
	}
	if Truncate("short") != "short" {
		t.Fatal("a short message changed")
	}
}

func TestTheSchemaRefusesAMessageLongerThan512Characters(t *testing.T) {
	s := compile(t)
	r := sample()
	r.Instances[1].Message = strings.Repeat("x", MaxMessageLen+1)
	if err := validate(t, s, r); err == nil {
		t.Fatal("a 513-character message validated")
	}
	r.Instances[1].Message = Truncate(r.Instances[1].Message)
	if err := validate(t, s, r); err != nil {
		t.Fatalf("a truncated message does not validate: %v", err)
	}
}
