// Command counter is the demo's tenant: a static HTTP server small enough
// to read in a minute, whose answer shows both kinds of state a sleeping
// microVM must keep. The request number lives only in the process's
// memory, so it continues after a wake only if the guest's memory was
// restored; visits.log lives in its working directory on the app's volume,
// so it survives any restart. greeting.txt is what the volume was seeded
// with (desired.json's initialContents).
//
//	GET /         hello from <hostname>, request #N since boot, file says …
//	GET /healthz  ok (not counted: the daemon's health check calls it)
//
// It listens on $PORT (the instance's httpPort, set by the guest init).
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// counter answers requests; its state is the count since the process
// started and the folder holding its files.
type counter struct {
	mu       sync.Mutex
	n        int
	dir      string
	hostname string
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	visits, err := c.logVisit(time.Now().UTC())
	if err != nil {
		http.Error(w, "writing visits.log: "+err.Error(), http.StatusInternalServerError)
		return
	}
	greeting := "(no greeting.txt)"
	if b, err := os.ReadFile(c.dir + "/greeting.txt"); err == nil {
		greeting = strings.TrimSpace(string(b))
	}
	lines := "lines"
	if visits == 1 {
		lines = "line"
	}
	fmt.Fprintf(w, "hello from %s, request #%d since boot, file says %q; visits.log has %d %s\n", c.hostname, c.n, greeting, visits, lines)
}

// logVisit appends one line to visits.log and returns how many it holds.
func (c *counter) logVisit(at time.Time) (int, error) {
	p := c.dir + "/visits.log"
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	_, err = fmt.Fprintf(f, "%s request #%d\n", at.Format(time.RFC3339), c.n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	lines := 0
	for s := bufio.NewScanner(bytes.NewReader(b)); s.Scan(); {
		lines++
	}
	return lines, nil
}

func main() {
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "counter:", err)
		os.Exit(1)
	}
	name := os.Getenv("NIBRUN_HOSTNAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	mux := http.NewServeMux()
	mux.Handle("/", &counter{dir: dir, hostname: name})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	fmt.Println("counter listening on :" + port + " in " + dir)
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "counter:", err)
		os.Exit(1)
	}
}
