package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/image/registrytest"
	"alpnib.dev/nibrunner/image/tartest"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot/slottest"
)

// viewCGI is what the site's /cgi-bin/view answers: the guest's own
// listing of the two folders the image's upper layer changed.
const viewCGI = "#!/bin/sh\necho 'Content-Type: text/plain'\necho\ncd /site && ls -A conf www\n"

// whiteoutImage is a two-layer image a guest can run. The lower layer
// holds busybox and a site: www/gone.txt, and conf/ with a file and a
// folder. The upper layer deletes www/gone.txt by a .wh. whiteout and
// replaces conf/ by an opaque one, putting new.conf in it.
func whiteoutImage(t *testing.T) v1.Image {
	t.Helper()
	lower := append(tartest.Busybox(t),
		tartest.Dir("site/"), tartest.Dir("site/www/"), tartest.File("site/www/healthz", "ok\n"),
		tartest.File("site/www/gone.txt", "the lower layer's; the upper one deletes it\n"),
		tartest.Dir("site/www/cgi-bin/"), tartest.Program("site/www/cgi-bin/view", viewCGI),
		tartest.Dir("site/conf/"), tartest.File("site/conf/old.conf", "old\n"),
		tartest.Dir("site/conf/stale/"), tartest.File("site/conf/stale/deep.conf", "old\n"),
	)
	upper := []tartest.Entry{
		tartest.Dir("site/"), tartest.Dir("site/www/"), tartest.File("site/www/.wh.gone.txt", ""),
		tartest.Dir("site/conf/"), tartest.File("site/conf/.wh..wh..opq", ""), tartest.File("site/conf/new.conf", "new\n"),
	}
	return imageOf(t, v1.Config{Entrypoint: []string{"/bin/busybox", "httpd"}}, tartest.Layer(t, lower...), tartest.Layer(t, upper...))
}

// TestOnARealMicroVMAnImagesWhiteoutsHoldInsideTheGuest is issue 33's
// first "done when" on QEMU (TCG here): a two-layer image pushed to
// Debian's docker-registry on loopback, its second layer deleting a file
// of the first by a whiteout and replacing a folder by an opaque one,
// named by digest in desired.json. The guest runs busybox httpd from it;
// through the proxy, the deleted file is not found and a CGI lists what
// the guest sees; an exec into the guest sees the same.
func TestOnARealMicroVMAnImagesWhiteoutsHoldInsideTheGuest(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb", "busybox", "docker-registry")
	reg := registrytest.Start(t, registrytest.Options{})
	ref := reg.Push(t, "apps/site", whiteoutImage(t))

	root := daemontest.RunDir(t, "nbi")
	daemontest.GuestImage(t)
	proxyPort := freeTCPPort(t)
	cfgPath := qemuConfig(t, root, fmt.Sprintf("[images]\nplain_http_registries = [%q]\n[proxy.http]\nlisten_address = \"127.0.0.1\"\nport = %d\n", reg.Addr, proxyPort))
	if err := daemontest.PinSlot(context.Background(), filepath.Join(root, "state"), "site", slottest.Free(t)); err != nil {
		t.Fatal(err)
	}
	writeDoc(t, root, map[string]any{
		"hostId":  "qemu-image",
		"volumes": []any{map[string]any{"volumeId": "site-data", "appId": "site", "sizeBytes": 32 << 20, "desiredState": "present"}},
		"instances": []any{map[string]any{
			"appId": "site", "deploymentId": "site-1", "volumeId": "site-data", "desiredState": "running",
			"layers": []any{map[string]any{"kind": "image", "reference": ref}},
			"config": map[string]any{
				"httpPort": 8080,
				"command": map[string]any{"program": "/bin/busybox", "args": []any{"httpd", "-f", "-p", "8080", "-h", "/site/www"},
					"workingDirectory": "/data", "environment": map[string]any{"PATH": "/bin"}},
				"resources": map[string]any{"vcpuCount": 1, "memoryMib": 128},
				"healthCheck": map[string]any{"kind": "http", "path": "/healthz", "intervalMs": 500, "timeoutMs": 5000,
					"gracePeriodMs": 300000, "healthyThreshold": 1, "unhealthyThreshold": 3},
				"restartPolicy": map[string]any{"maxRestarts": 2, "initialBackoffMs": 1000, "maxBackoffMs": 10000, "backoffFactor": 2, "resetAfterMs": 600000},
			},
			"hostnames": []any{map[string]any{"hostname": "site.example.net", "kind": "platform"}},
		}},
		"checkpoints": []any{}, "exports": []any{},
	})
	serveInBackground(t, cfgPath, "qemu")
	// Pulled, flattened, booted and healthy: running. A boot under
	// software emulation on a loaded machine may take minutes.
	waitReport(t, root, "the site pulled and running", 6*time.Minute, appIs("site", reported.InstanceRunning))

	awaitRoute(t, proxyPort, "site.example.net", "/healthz", "ok\n")

	want := "conf:\nnew.conf\n\nwww:\ncgi-bin\nhealthz\n"
	t.Run("ThroughTheProxyTheDeletedFileIsNotFoundAndTheGuestListsOnlyTheUpperLayersConf", func(t *testing.T) {
		if code, body, err := proxyGet(proxyPort, "site.example.net", "/cgi-bin/view"); err != nil || code != http.StatusOK || body != want {
			t.Errorf("the guest's listing through the proxy is %d %q (%v); want 200 %q", code, body, err, want)
		}
		// busybox httpd's own 404 page, not the proxy's sentence for a
		// hostname it does not know.
		if code, body, err := proxyGet(proxyPort, "site.example.net", "/gone.txt"); err != nil || code != http.StatusNotFound || !strings.Contains(body, "404 Not Found") {
			t.Errorf("the whited-out gone.txt answered %d %q (%v) through the proxy; want busybox's 404", code, body, err)
		}
	})
	t.Run("AnExecIntoTheGuestSeesTheSame", func(t *testing.T) {
		out, err := ctl("exec", "site", "--config", cfgPath, "--", "/bin/sh", "-c", "cd /site && ls -A conf www; test ! -e www/gone.txt && test ! -e conf/stale")
		if err != nil || out != want {
			t.Errorf("exec printed %q and ended %v; want %q and success", out, err, want)
		}
	})
}

// proxyGet asks the HTTP proxy on loopback for host's path and returns
// the status and body.
func proxyGet(port int, host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// awaitRoute waits until the proxy hands host's path to the app and it
// answers 200 with want: the route may reach the proxy a moment after
// the report, and until then the proxy answers itself.
func awaitRoute(t *testing.T, port int, host, path, want string) {
	t.Helper()
	var code int
	var body string
	var err error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if code, body, err = proxyGet(port, host, path); err == nil && code == http.StatusOK && body == want {
			return
		}
	}
	t.Fatalf("GET %s%s through the proxy never reached the app: %d %q %v", host, path, code, body, err)
}

// freeTCPPort is a loopback port nothing listens on now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
