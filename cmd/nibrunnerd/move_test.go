package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store/s3test"
)

// TestAnAppMovesToAnotherHostThroughAFinalCheckpointAndServesItsDataThere
// is docs/fleet.md's move, two daemons (fake VMM, ext4 volumes) sharing one
// versitygw: the app stops on host A, A takes a final checkpoint of its
// volume, and B's document names that checkpoint as the volume's
// initialContents. B's volume is A's final image byte for byte, and B's
// proxy serves the app.
func TestAnAppMovesToAnotherHostThroughAFinalCheckpointAndServesItsDataThere(t *testing.T) {
	testenv.RequireRoot(t)
	debugfs := testenv.RequireCommand(t, "debugfs")
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "fleet")
	ctx := context.Background()
	put := func(key string, b []byte) string {
		t.Helper()
		if _, err := srv.Client.PutObject(ctx, bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}

	// Both hosts fetch artifacts from the bucket and put checkpoints
	// there; B has a proxy.
	type host struct {
		root, cfg string
		doc, in   map[string]any
		app       string
	}
	proxyPort := 18700 + rand.IntN(200)
	var a, b host
	for i, h := range []*host{&a, &b} {
		h.root, h.cfg, h.doc, h.in, h.app = fakeHost(t)
		cfg, _ := os.ReadFile(h.cfg)
		s := strings.Replace(string(cfg), `store_url = "`+h.root+`/store"`, `store_url = "s3://fleet"`, 1)
		if i == 1 {
			s += fmt.Sprintf("[proxy.http]\nlisten_address = \"127.0.0.1\"\nport = %d\n", proxyPort)
		}
		os.WriteFile(h.cfg, []byte(s), 0o644)
		layer, _ := os.ReadFile(filepath.Join(h.root, "store", "layers", "base.squashfs"))
		put("layers/base.squashfs", layer)
		h.in["desiredState"] = "running"
	}

	// On A the app runs on a volume seeded with its site.
	site := tarGz(t, map[string]string{"index.html": "<h1>moved</h1>", "posts/1.md": strings.Repeat("a post\n", 4000)})
	vol := a.doc["volumes"].([]any)[0].(map[string]any)
	volID := vol["volumeId"].(string)
	vol["initialContents"] = map[string]any{"digest": put("seeds/site.tar.gz", site), "objectKey": "seeds/site.tar.gz", "destinationPath": "/srv"}
	writeDoc(t, a.root, a.doc)
	serveInBackground(t, a.cfg, "fake")
	waitReport(t, a.root, "the app running on A", time.Minute, appIs(a.app, reported.InstanceRunning))

	// 1. Stop on A.
	start := time.Now()
	a.in["desiredState"] = "stopped"
	writeDoc(t, a.root, a.doc)
	waitReport(t, a.root, "the app stopped on A", time.Minute, appIs(a.app, reported.InstanceStopped))
	stopped := time.Since(start)
	// What the app wrote last (the fake guest writes nothing itself).
	imgA := filepath.Join(a.root, "volumes", volID+".ext4")
	last := filepath.Join(t.TempDir(), "last")
	os.WriteFile(last, []byte("written on A before the move\n"), 0o644)
	if out, err := exec.Command(debugfs, "-w", "-R", "write "+last+" /root/srv/last.txt", imgA).CombinedOutput(); err != nil {
		t.Fatalf("debugfs write: %v: %s", err, out)
	}

	// 2. A's final checkpoint, into the bucket.
	start = time.Now()
	a.doc["checkpoints"] = []any{map[string]any{"checkpointId": "move-1", "volumeId": volID, "desiredState": "present"}}
	writeDoc(t, a.root, a.doc)
	r := waitReport(t, a.root, "the final checkpoint ready on A", time.Minute, func(r *reported.HostReportedState) bool {
		return len(r.Checkpoints) == 1 && r.Checkpoints[0].State == reported.CheckpointReady
	})
	checkpointed := time.Since(start)
	cp := r.Checkpoints[0]
	obj, err := srv.Client.StatObject(ctx, bucket, string(cp.ObjectKey), minio.StatObjectOptions{})
	if err != nil || cp.Digest == "" {
		t.Fatalf("checkpoint %+v: its object %v, digest %q", cp, err, cp.Digest)
	}
	wantImage := fileSum(t, imgA)

	// 3. B's document restores it, at the size A had.
	start = time.Now()
	vol = b.doc["volumes"].([]any)[0].(map[string]any)
	vol["initialContents"] = map[string]any{"digest": string(cp.Digest), "objectKey": string(cp.ObjectKey), "destinationPath": "/"}
	b.in["hostnames"] = []any{map[string]any{"hostname": "blog.example.net", "kind": "platform"}}
	writeDoc(t, b.root, b.doc)
	serveInBackground(t, b.cfg, "fake")
	waitReport(t, b.root, "the app running on B", time.Minute, appIs(b.app, reported.InstanceRunning))
	restored := time.Since(start)

	imgB := filepath.Join(b.root, "volumes", volID+".ext4")
	if got := debugfsCat(t, debugfs, imgB, "/root/srv/last.txt"); got != "written on A before the move\n" {
		t.Errorf("B's volume holds %q for A's last write", got)
	}
	if got := debugfsCat(t, debugfs, imgB, "/root/srv/index.html"); got != "<h1>moved</h1>" {
		t.Errorf("B's volume holds %q for A's site", got)
	}
	// Byte for byte: B's volume is A's final image.
	if got := fileSum(t, imgB); got != wantImage {
		t.Errorf("B's volume is not A's final image byte for byte")
	}

	// B's proxy serves the moved app.
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", proxyPort), nil)
	req.Host = "blog.example.net"
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			bb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				body = string(bb)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's proxy never served the app: %v", err)
		}
	}
	if !strings.HasPrefix(body, b.app+" ") {
		t.Errorf("B's proxy answered %q; want the app", body)
	}
	t.Logf("move: stop on A %s; final checkpoint %s (%d bytes sent, the volume's data); restore and start on B %s (%d bytes fetched)",
		stopped.Round(time.Millisecond), checkpointed.Round(time.Millisecond), obj.Size, restored.Round(time.Millisecond), obj.Size)
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))
}

func debugfsCat(t *testing.T, debugfs, img, p string) string {
	t.Helper()
	out, err := exec.Command(debugfs, "-R", "cat "+p, img).Output()
	if err != nil {
		t.Fatalf("debugfs cat %s: %v", p, err)
	}
	return string(out)
}
