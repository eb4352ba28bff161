package proxy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// nginxBackend runs nginx on loopback as an app would sit behind the
// proxy: it parses what we forward with its own parser, on one kept-alive
// connection from us, and passes what it read to next (a Go app). Its
// access log is one line per request it parsed: "STATUS METHOD URI".
func nginxBackend(t *testing.T, next int) (port int, accessLog string) {
	bin := testenv.RequireCommand(t, "nginx")
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	accessLog = filepath.Join(dir, "access.log")
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
  log_format parsed '$status $request_method $request_uri';
  access_log %[1]s/access.log parsed;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream app { server 127.0.0.1:%[2]d; keepalive 4; }
  server {
    listen 127.0.0.1:%[3]d;
    keepalive_requests 100000;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
    }
  }
}
`, dir, next, port)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", cf)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	waitFor(t, "nginx to listen", func() bool {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %v\n%s", err, log)
		default:
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return port, accessLog
}

func logLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[:strings.Count(string(b), "\n")]
}

// TestNginxBehindTheProxyParsesExactlyTheRequestsWeAccepted is the
// differential test with nginx's parser: for every request of the
// smuggling corpus, nginx (on the proxy's pooled connection to it) parses
// exactly the one request we accepted, as we read it, or none when we
// refused it; and the next client's request is its own.
func TestNginxBehindTheProxyParsesExactlyTheRequestsWeAccepted(t *testing.T) {
	seen := make(chan string, 16)
	port, accessLog := nginxBackend(t, parsedApp(t, seen))
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	apply(t, p, routeTo(smuggleHost, "shop", port, route.Up))
	next := "GET /next HTTP/1.1\r\nHost: shop.example.com\r\n\r\n"
	parsed := 0
	expect := func(t *testing.T, lines ...string) {
		t.Helper()
		want := parsed + len(lines)
		waitFor(t, "nginx to log what it parsed", func() bool { return len(logLines(t, accessLog)) >= want })
		got := logLines(t, accessLog)
		if len(got) != want || strings.Join(got[parsed:], "\n") != strings.Join(lines, "\n") {
			t.Fatalf("nginx parsed %q, want %q", got[parsed:], lines)
		}
		parsed = want
	}
	if status, _ := exchange(t, addr, next); status != 200 {
		t.Fatalf("warm-up: %d", status)
	}
	<-seen
	expect(t, "200 GET /next")
	for _, c := range smugglingCorpus {
		t.Run(c.name, func(t *testing.T) {
			status, body := exchange(t, addr, c.request)
			var lines []string
			switch {
			case c.refused != 0 && status != c.refused:
				t.Fatalf("got %d %q, want it refused %d", status, body, c.refused)
			case c.refused == 0:
				if status != 200 || body != c.want {
					t.Fatalf("got %d %q, want 200 %q", status, body, c.want)
				}
				if got := <-seen; got != c.want {
					t.Fatalf("behind nginx the app saw %q, want %q", got, c.want)
				}
				f := strings.Fields(c.want)
				lines = append(lines, "200 "+f[0]+" "+f[1])
			}
			if status, body := exchange(t, addr, next); status != 200 || body != "GET /next host=shop.example.com body=" {
				t.Fatalf("the next client got %d %q", status, body)
			}
			<-seen
			expect(t, append(lines, "200 GET /next")...)
		})
	}
}
