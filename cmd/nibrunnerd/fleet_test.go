package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store/s3test"
)

// TestTwoHostsShareOneBucketEachConvergingOnItsOwnObjectAndReportingBesideIt
// is the fleet without a control plane: two daemons (fake VMM), one
// bucket, an object each for desired.json and one for reported.json,
// through a new deployment, an outage of the bucket and a refused document.
func TestTwoHostsShareOneBucketEachConvergingOnItsOwnObjectAndReportingBesideIt(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "fleet")
	ctx := context.Background()
	put := func(key string, doc map[string]any) {
		t.Helper()
		b, _ := json.Marshal(doc)
		if _, err := srv.Client.PutObject(ctx, bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) *reported.HostReportedState {
		obj, err := srv.Client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return nil
		}
		defer obj.Close()
		b, err := io.ReadAll(obj)
		var r reported.HostReportedState
		if err != nil || json.Unmarshal(b, &r) != nil {
			return nil
		}
		return &r
	}
	waitObject := func(key, what string, cond func(*reported.HostReportedState) bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if r := get(key); r != nil && cond(r) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never showed %s: %+v", key, what, get(key))
			}
		}
	}

	type host struct {
		name, root string
		doc, in    map[string]any
	}
	var hosts []host
	for _, name := range []string{"host-a", "host-b"} {
		root, cfgPath, doc, in, _ := fakeHost(t)
		cfg, _ := os.ReadFile(cfgPath)
		fleet := strings.Replace(string(cfg), `desired_state_file = "`+root+`/control/desired.json"`,
			`desired_state_file = "s3://fleet/hosts/`+name+`/desired.json"
desired_state_poll_ms = 200
reported_state_url = "s3://fleet/hosts/`+name+`/reported.json"`, 1)
		os.WriteFile(cfgPath, []byte(fleet), 0o644)
		os.Remove(filepath.Join(root, "control", "desired.json")) // this host reads its document from the bucket
		doc["hostId"] = name
		in["desiredState"] = "running"
		in["deploymentId"] = name + "-1"
		put("hosts/"+name+"/desired.json", doc)
		serveInBackground(t, cfgPath, "fake")
		hosts = append(hosts, host{name, root, doc, in})
	}
	runs := func(deployment string) func(*reported.HostReportedState) bool {
		return func(r *reported.HostReportedState) bool {
			return len(r.Instances) == 1 && string(r.Instances[0].DeploymentId) == deployment && r.Instances[0].State == reported.InstanceRunning
		}
	}
	for _, h := range hosts {
		waitObject("hosts/"+h.name+"/reported.json", h.name+"'s app running", func(r *reported.HostReportedState) bool {
			return string(r.HostId) == h.name && runs(h.name+"-1")(r)
		})
	}

	// A new deployment for host-a only: host-a replaces its app and says
	// so in the bucket; host-b keeps its own.
	a := hosts[0]
	a.in["deploymentId"] = "host-a-2"
	put("hosts/host-a/desired.json", a.doc)
	waitObject("hosts/host-a/reported.json", "host-a's second deployment running", runs("host-a-2"))
	if r := get("hosts/host-b/reported.json"); r == nil || !runs("host-b-1")(r) {
		t.Fatalf("host-b's report after host-a's change: %+v", r)
	}

	// The bucket unreachable: both hosts keep what they run; once it is
	// back, the next document is taken.
	srv.Down()
	// A report written well after the outage began (two polls of 200 ms
	// failed by then) still shows the app running, and says why the host
	// keeps the document it has (the poll's problem is the report's
	// message until a poll reads the object again).
	after := time.Now().Add(500 * time.Millisecond)
	for _, h := range hosts {
		r := waitReport(t, h.root, h.name+" reporting during the outage", 10*time.Second, func(r *reported.HostReportedState) bool {
			return r.ReportedAt.After(after) && len(r.Instances) == 1 && r.Message != ""
		})
		want := "s3://fleet/hosts/" + h.name + "/desired.json cannot be read, so the host keeps the document it has"
		if r.Instances[0].State != reported.InstanceRunning || !strings.HasPrefix(r.Message, want) {
			t.Fatalf("%s with the bucket down: %+v, message %q, want it to start %q", h.name, r.Instances[0], r.Message, want)
		}
	}
	srv.Up(t)
	a.in["deploymentId"] = "host-a-3"
	put("hosts/host-a/desired.json", a.doc)
	waitObject("hosts/host-a/reported.json", "host-a's third deployment running after the outage", runs("host-a-3"))

	// A document the host refuses keeps the last good one running, and
	// the refusal reaches the bucket.
	put("hosts/host-b/desired.json", map[string]any{"hostId": "host-b"})
	waitObject("hosts/host-b/reported.json", "host-b refusing its document", func(r *reported.HostReportedState) bool {
		return strings.Contains(r.Message, "desired.json was refused") && runs("host-b-1")(r)
	})
}
