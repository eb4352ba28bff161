package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"alpnib.dev/nibrunner/execwire"
)

// ExecUpgrade is the protocol an exec request upgrades its connection
// to: execwire frames, session 0, in both directions.
const ExecUpgrade = "nibrunner-exec/1"

// ExecRequest is the body of POST /v1/apps/<app>/exec: what to run. The
// answer is 101 Switching Protocols to ExecUpgrade; then the client sends
// stdin, window, resize, signal, close-stdin and close frames, and reads
// data, window and one exit frame, under execwire's credit from
// execwire.DefaultWindow each way, as the guest's init does.
type ExecRequest struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	// UID and GID run the program (the CLI's default is 65534).
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	TTY  bool   `json:"tty,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	// Stdin: the client sends stdin (-i).
	Stdin bool `json:"stdin,omitempty"`
	// Copy is "in" or "out" for nibrunnerd cp's tar (the event's verb is
	// then cp), "" for an exec.
	Copy string `json:"copy,omitempty"`
}

// Spec is the request as the guest's init reads it.
func (r ExecRequest) Spec() execwire.Spec {
	return execwire.Spec{Argv: r.Argv, Env: r.Env, Workdir: r.Workdir, UID: r.UID, GID: r.GID,
		TTY: r.TTY, Rows: r.Rows, Cols: r.Cols, Stdin: r.Stdin}
}

// Execs is what the server asks of the daemon's exec sessions (package
// daemon/execs).
type Execs interface {
	// Open starts spec in app's live guest, waking an on-request app
	// first, or says in a sentence why it cannot.
	Open(ctx context.Context, app string, spec execwire.Spec) (ExecSession, error)
}

// ExecSession is one open exec.
type ExecSession interface {
	// Relay carries the session's frames between conn and the guest until
	// the program exits, the client goes away or the session is closed,
	// closes conn, and returns how the session ended.
	Relay(ctx context.Context, conn io.ReadWriteCloser) execwire.Exit
}

// Verbs of exec events.
const (
	VerbExec Verb = "exec"
	VerbCopy Verb = "cp"
)

// SubjectExec is an exec or cp session into an app.
const SubjectExec Subject = "exec"

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	app := r.PathValue("app")
	if s.Execs == nil {
		writeError(w, http.StatusNotFound, "this daemon does not run exec sessions")
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), ExecUpgrade) {
		writeError(w, http.StatusBadRequest, "an exec upgrades its connection: send Connection: Upgrade and Upgrade: "+ExecUpgrade)
		return
	}
	var req ExecRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 2*execwire.MaxPayload)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the exec request is not JSON: "+err.Error())
		return
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		writeError(w, http.StatusBadRequest, "an exec names no program: give it after --")
		return
	}
	start := time.Now()
	ev := Event{Subject: SubjectExec, ID: app, Verb: VerbExec, Argv: req.Argv, PeerUID: peerUID(r)}
	if req.Copy != "" {
		ev.Verb = VerbCopy
	}
	timeout := s.WakeTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	octx, cancel := context.WithTimeout(r.Context(), timeout)
	sess, err := s.Execs.Open(octx, app, req.Spec())
	cancel()
	if err != nil {
		ev.Message = err.Error()
		s.record(ev, start, nil)
		code := http.StatusInternalServerError
		for _, c := range append(s.Conflicts, s.ExecConflicts...) {
			if errors.Is(err, c) {
				code = http.StatusConflict
			}
		}
		if s.unknown(app) {
			code = http.StatusNotFound
		}
		writeError(w, code, err.Error())
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		sess.Relay(r.Context(), nopConn{})
		writeError(w, http.StatusInternalServerError, "exec: "+err.Error())
		return
	}
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", ExecUpgrade)
	if err := rw.Flush(); err != nil {
		conn.Close()
		sess.Relay(r.Context(), nopConn{})
		return
	}
	exit := sess.Relay(r.Context(), bufConn{Reader: rw.Reader, Conn: conn})
	ev.Message = exit.Error
	s.record(ev, start, &exit.Code)
}

// record journals an exec's event.
func (s *Server) record(ev Event, start time.Time, code *int32) {
	if s.Journal == nil {
		return
	}
	ev.At = time.Now().UTC()
	ev.DurationMs = time.Since(start).Milliseconds()
	if code != nil {
		c := int(*code)
		ev.ExitCode = &c
	}
	s.Journal.Record(ev)
}

// bufConn reads what the server buffered before the hijack first.
type bufConn struct {
	*bufio.Reader
	net.Conn
}

func (c bufConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }

// nopConn ends a session that never reached its client.
type nopConn struct{}

func (nopConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopConn) Write(p []byte) (int, error) { return len(p), nil }
func (nopConn) Close() error                { return nil }

type connKey struct{}

// peerUID is the uid of the process on the other end of r's unix socket
// (SO_PEERCRED), -1 when it cannot be read.
func peerUID(r *http.Request) *int {
	c, ok := r.Context().Value(connKey{}).(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return nil
	}
	uid := int(cred.Uid)
	return &uid
}

// Exec opens an exec session of req in app and returns its connection,
// carrying execwire frames (RunExec speaks them). A refusal is the
// daemon's sentence.
func (c *Client) Exec(ctx context.Context, app string, req ExecRequest) (io.ReadWriteCloser, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	path := "/v1/apps/" + url.PathEscape(app) + "/exec"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://nibrunnerd"+path, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Connection", "Upgrade")
	hreq.Header.Set("Upgrade", ExecUpgrade)
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.roundTrip(hreq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return nil, answerError(resp, http.MethodPost, path)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: the daemon's upgraded connection cannot be written", path)
	}
	return rwc, nil
}
