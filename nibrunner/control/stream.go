package control

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, ok := s.appStatus(w, r.PathValue("app"))
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// appStatus finds app in the report, answering the error itself when it
// cannot.
func (s *Server) appStatus(w http.ResponseWriter, app string) (AppStatus, bool) {
	b, ok := s.readReport(w)
	if !ok {
		return AppStatus{}, false
	}
	var rep reported.HostReportedState
	if err := json.Unmarshal(b, &rep); err != nil {
		writeError(w, http.StatusInternalServerError, "reading the report: "+err.Error())
		return AppStatus{}, false
	}
	var doc *desired.HostDesiredState
	if s.Accepted != nil {
		doc = s.Accepted()
	}
	o := OwnersOf(doc)
	st, ok := StatusOf(&rep, app, o)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no app %q on this host: the report has no instance of it", app))
		return AppStatus{}, false
	}
	return st, true
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	app := r.PathValue("app")
	q := r.URL.Query()
	n, err := intParam(q.Get("tail"), -1)
	if err != nil || n < -1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("tail: %q is not a number of lines: give ?tail=N for the last N lines of each log, or leave it out for all of them", q.Get("tail")))
		return
	}
	if _, ok := s.appStatus(w, app); !ok {
		return
	}
	var files []LogFile
	if s.Logs != nil {
		files = s.Logs(app)
	}
	if len(files) == 0 {
		writeError(w, http.StatusNotFound, "this daemon keeps no logs of "+app)
		return
	}
	nd := newNDJSON(w)
	follow := q.Get("follow") == "1"
	if follow {
		nd.begin()
	}
	err = streamLogs(r.Context(), files, n, follow, func(l LogLine) error { return nd.send(l) })
	if err != nil && !nd.started {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no log of %s yet: %v", app, err))
	}
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := intParam(q.Get("after"), 0)
	if err != nil || after < 0 {
		writeError(w, http.StatusBadRequest, "after: give the seq of the last event seen")
		return
	}
	j := s.Journal
	if j == nil {
		j = NewJournal(0)
	}
	nd := newNDJSON(w)
	nd.begin()
	seq := uint64(after)
	for {
		evs, more := j.After(seq)
		for _, e := range evs {
			if nd.send(e) != nil {
				return
			}
			seq = e.Seq
		}
		if q.Get("follow") != "1" {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-more:
		}
	}
}

func intParam(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	return strconv.Atoi(v)
}

// ndjson writes one JSON object a line and flushes each.
type ndjson struct {
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
}

func newNDJSON(w http.ResponseWriter) *ndjson { return &ndjson{w: w, enc: json.NewEncoder(w)} }

func (n *ndjson) begin() {
	if !n.started {
		n.w.Header().Set("Content-Type", "application/x-ndjson")
		n.w.WriteHeader(http.StatusOK)
		n.started = true
		if f, ok := n.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func (n *ndjson) send(v any) error {
	n.begin()
	if err := n.enc.Encode(v); err != nil {
		return err
	}
	if f, ok := n.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
