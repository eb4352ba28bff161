package daemon

import (
	"context"
	"crypto/rand"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/export"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
	"alpnib.dev/nibrunner/volume"
)

// The child daemon of the kill tests takes these from its environment:
// ext4 volumes (NIBRUN_TEST_EXT4=1) and exports into S3
// (NIBRUN_TEST_EXPORTS_URL, with the S3 server in the usual variables).
const (
	ext4Env       = "NIBRUN_TEST_EXT4"
	exportsURLEnv = "NIBRUN_TEST_EXPORTS_URL"
)

// backgroundFromEnv swaps the child daemon's volumes and exports for what
// its environment asks.
func backgroundFromEnv(deps *Deps, dir string) error {
	if os.Getenv(ext4Env) == "1" {
		st, err := store.NewDir(filepath.Join(dir, "store"))
		if err != nil {
			return err
		}
		vols, err := volume.NewLocal(filepath.Join(dir, "volumes"), st)
		if err != nil {
			return err
		}
		deps.Volumes = vols
	}
	if url := os.Getenv(exportsURLEnv); url != "" {
		objects, err := store.NewS3(context.Background(), url)
		if err != nil {
			return err
		}
		objects.SetPartSize(5 << 20)
		exps, err := export.Open(context.Background(), export.Options{Objects: objects, StagingDir: filepath.Join(dir, "export-staging"), RecordDir: filepath.Join(dir, "exports")})
		if err != nil {
			return err
		}
		deps.Exports = exps
	}
	return nil
}

func TestADaemonKilledMidExportFinishesItAfterARestartAndLeavesNoIncompleteUpload(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs", "losetup", "mount", "umount")
	h := newHost(t)
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "exports")
	ctx := context.Background()
	uploads := func() int {
		n := 0
		for u := range srv.Client.ListIncompleteUploads(ctx, "exports", "", true) {
			if u.Err != nil {
				t.Fatal(u.Err)
			}
			n++
		}
		return n
	}

	// A volume seeded with 64 MiB that does not compress: the upload takes
	// thirteen parts, long enough to be cut.
	blob := make([]byte, 64<<20)
	rand.Read(blob)
	seed := tarGz(t, map[string]string{"blob": string(blob)})
	d := doc(h.app("a", "a1", withState(desired.StateStopped)))
	d.Volumes[0].SizeBytes = 160 << 20
	d.Volumes[0].InitialContents = &desired.InitialContents{Digest: putObject(t, h.dir, "seeds/blob.tar.gz", seed), ObjectKey: "seeds/blob.tar.gz", DestinationPath: "/data"}
	d.Exports = []desired.DesiredExport{{ExportId: "e1", AppId: "a", VolumeId: "a-data", ObjectKey: "a/e1.tar.gz", DesiredState: desired.Present}}
	h.write(t, d)
	env := []string{"NIBRUN_TEST_DAEMON_DIR=" + h.dir, ext4Env + "=1", exportsURLEnv + "=s3://exports/host-k"}

	// The first daemon reaches S3 through a watch that says when the
	// upload has stored its first part: it is killed then, mid-upload.
	endpoint, partStored := watchS3(t, srv)
	t.Setenv("NIB_S3_ENDPOINT", endpoint)
	first := startSelf(t, "^$", env...)
	select {
	case <-partStored:
	case <-time.After(2 * time.Minute):
		t.Fatal("the export's upload never began")
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	if uploads() == 0 {
		t.Log("the upload completed before the kill landed; the restart still has to report it")
	}
	if _, err := srv.Client.StatObject(ctx, "exports", "host-k/a/e1.tar.gz", minio.StatObjectOptions{}); err == nil {
		t.Log("the kill landed after the upload completed")
	}

	os.Remove(h.reportPath())
	t.Setenv("NIB_S3_ENDPOINT", srv.Endpoint)
	startSelf(t, "^$", env...)
	r := h.waitFor(t, "e1 ready after the restart", func(r *reported.HostReportedState) bool {
		return len(r.Exports) == 1 && r.Exports[0].State == reported.ExportReady
	})
	st, err := srv.Client.StatObject(ctx, "exports", "host-k/a/e1.tar.gz", minio.StatObjectOptions{})
	if err != nil || uint64(st.Size) != r.Exports[0].SizeBytes || st.Size < 64<<20 {
		t.Fatalf("after the restart the object is %+v (%v), reported %+v", st, err, r.Exports[0])
	}
	if n := uploads(); n != 0 {
		t.Errorf("%d incomplete uploads are left under the key", n)
	}
	left, _ := os.ReadDir(filepath.Join(h.dir, "export-staging"))
	if len(left) != 0 {
		t.Errorf("the staging folder holds %v", left)
	}
	if held := loopsUnder(t, h.dir); len(held) != 0 {
		t.Errorf("loop devices are still attached to staged copies: %v", held)
	}
}

// watchS3 stands between a daemon and srv: it passes every request on as
// it is (keeping the Host header, which the request's signature covers)
// and closes partStored once srv has stored a part of a multipart upload.
// It returns the endpoint to give the daemon.
func watchS3(t *testing.T, srv *s3test.Server) (endpoint string, partStored <-chan struct{}) {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	stored := make(chan struct{})
	var once sync.Once
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		q := resp.Request.URL.Query()
		if resp.Request.Method == http.MethodPut && q.Has("partNumber") && q.Has("uploadId") && resp.StatusCode == http.StatusOK {
			once.Do(func() { close(stored) })
		}
		return nil
	}
	// The kill cuts requests in flight; that is the test, not an error.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	ts := httptest.NewServer(rp)
	t.Cleanup(ts.Close)
	return ts.URL, stored
}

// loopsUnder lists the loop devices whose backing file is under dir
// (deleted or not): a staged copy the export did not let go of.
func loopsUnder(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").CombinedOutput()
	if err != nil {
		t.Fatalf("losetup --list: %v: %s", err, out)
	}
	var held []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, dir+"/") {
			held = append(held, strings.TrimSpace(line))
		}
	}
	return held
}
