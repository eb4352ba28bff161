// Package control is nibrunnerd's local control interface: a small HTTP
// API on a unix socket (runtime_dir/nibrunnerd.sock, mode 0600, so only
// root reaches it) that lets a process outside the daemon read its report,
// an app's logs and what each pass did, and ask for an app to sleep or
// wake now. The operator's `nibrunnerd ps|status|logs|events|sleep|wake`
// use it; the daemon's own loops do not need it.
//
//	GET  /v1/report            reported.json as the daemon last wrote it
//	GET  /v1/apps/<app>        the app's part of it (AppStatus)
//	GET  /v1/apps/<app>/logs   its logs, ?tail=N lines of each, ?follow=1 for more
//	GET  /v1/events            what each pass did, ?after=SEQ, ?follow=1 for more
//	POST /v1/apps/<app>/sleep  snapshot an on-request app now
//	POST /v1/apps/<app>/wake   bring it up and wait for its health check
//	POST /v1/apps/<app>/exec   run a program in its guest (ExecRequest),
//	                           upgraded to execwire frames (ExecUpgrade)
//
// Logs and events answer newline-delimited JSON (LogLine, Event), one
// object a line, flushed as they come. Events are derived from consecutive
// reports (Diff) and kept in a bounded ring (Journal) for the life of the
// server. Errors answer {"error": "..."} with 404 (no such app or no
// report yet), 409 (the app cannot do that now) or 500.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/perm"
)

// SocketName is the control socket's name in the daemon's runtime_dir.
const SocketName = "nibrunnerd.sock"

// SocketPath is where the daemon with this runtime_dir listens.
func SocketPath(runtimeDir string) string { return filepath.Join(runtimeDir, SocketName) }

// Apps is what the server asks of the daemon.
type Apps interface {
	Sleep(ctx context.Context, app string) error
	Wake(ctx context.Context, app string) error
}

// Server answers the control API for one daemon.
type Server struct {
	Apps Apps
	// ReportPath is the reported.json the daemon writes.
	ReportPath string
	// Conflicts are the daemon's errors that mean the app cannot do that
	// now (answered 409 instead of 500).
	Conflicts []error
	// Accepted is the document the daemon accepted and converges on (nil
	// before it accepted one); status reads from it which volume and
	// exports are an app's (optional). It is never desired.json as it is
	// on disk, which may be a document the daemon refused.
	Accepted func() *desired.HostDesiredState
	// Logs names an app's log files (optional: no logs without it).
	Logs func(app string) []LogFile
	// Journal keeps the events; ListenAndServe makes one and feeds it
	// ReportPath's reports when it is nil.
	Journal *Journal
	// Execs runs exec sessions (optional: exec answers 404 without it);
	// ExecConflicts are its errors answered 409.
	Execs         Execs
	ExecConflicts []error
	// WakeTimeout bounds a wake (default 5 minutes: a cold boot under TCG
	// takes seconds, a restore less).
	WakeTimeout time.Duration
}

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/report", s.report)
	mux.HandleFunc("GET /v1/apps/{app}", s.status)
	mux.HandleFunc("GET /v1/apps/{app}/logs", s.logs)
	mux.HandleFunc("GET /v1/events", s.events)
	mux.HandleFunc("POST /v1/apps/{app}/sleep", s.app(func(ctx context.Context, app string) error { return s.Apps.Sleep(ctx, app) }))
	mux.HandleFunc("POST /v1/apps/{app}/exec", s.exec)
	mux.HandleFunc("POST /v1/apps/{app}/wake", s.app(func(ctx context.Context, app string) error { return s.Apps.Wake(ctx, app) }))
	return mux
}

func (s *Server) report(w http.ResponseWriter, _ *http.Request) {
	b, ok := s.readReport(w)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// readReport reads reported.json, answering the error itself when it
// cannot.
func (s *Server) readReport(w http.ResponseWriter) ([]byte, bool) {
	b, err := os.ReadFile(s.ReportPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, "the daemon has not written its report yet")
		return nil, false
	case err != nil:
		writeError(w, http.StatusInternalServerError, "reading the report: "+err.Error())
		return nil, false
	}
	return b, true
}

func (s *Server) app(do func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app := r.PathValue("app")
		if app == "" || strings.ContainsAny(app, "/\x00") {
			writeError(w, http.StatusBadRequest, "no app named in the path")
			return
		}
		timeout := s.WakeTimeout
		if timeout <= 0 {
			timeout = 5 * time.Minute
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := do(ctx, app); err != nil {
			// An app the report does not hold is the one thing to say,
			// whatever the daemon made of it ("this app is not running").
			if s.unknown(app) {
				writeError(w, http.StatusNotFound, fmt.Sprintf("no app %q on this host: the report has no instance of it", app))
				return
			}
			code := http.StatusInternalServerError
			for _, c := range s.Conflicts {
				if errors.Is(err, c) {
					code = http.StatusConflict
				}
			}
			writeError(w, code, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"app\":%q,\"ok\":true}\n", app)
	}
}

// unknown says whether the daemon's last report holds no instance of app;
// without a readable report it cannot say, and says no.
func (s *Server) unknown(app string) bool {
	if s.ReportPath == "" {
		return false
	}
	rep := ReadReport(s.ReportPath)
	if rep == nil {
		return false
	}
	_, ok := StatusOf(rep, app, Owners{})
	return !ok
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// ListenAndServe serves the API on the unix socket at path until ctx ends,
// then removes the socket (Listen, then Serve).
func (s *Server) ListenAndServe(ctx context.Context, path string) error {
	l, err := Listen(path)
	if err != nil {
		return err
	}
	return s.Serve(ctx, path, l)
}

// ErrInUse is Listen's error when a live daemon answers on the socket.
var ErrInUse = errors.New("another nibrunnerd is listening on it")

// Listen binds the control socket at path, mode 0600. A socket left by a
// daemon that died is replaced; one a live daemon answers on is not (two
// daemons on one runtime_dir are a mistake worth stopping for). Closing
// the listener leaves the socket file; Serve removes it when it ends.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), perm.Dir); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: %w; stop it first, or give this one a configuration with another paths.runtime_dir", path, ErrInUse)
	}
	// Bound under a temporary name, made 0600, then renamed into place:
	// nobody can connect in between.
	tmp := path + ".new"
	os.Remove(tmp)
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return l, nil
}

// Serve answers the API on l, the socket Listen bound at path, until ctx
// ends, then removes the socket.
func (s *Server) Serve(ctx context.Context, path string, l net.Listener) error {
	if s.Journal == nil {
		s.Journal = FollowReports(ctx, s.ReportPath)
	}
	// Requests live in ctx, so a follower's stream ends with the server.
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
		// An exec's event names the uid of the process that asked.
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	<-done
	os.Remove(path)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("control socket: %w", err)
}
