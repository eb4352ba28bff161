package proxy

import (
	"net/http"
	"strings"
	"time"
)

// answer is a reply the proxy gives itself, not the app.
type answer struct {
	status int
	text   string
}

// The proxy's own answers: one sentence each, the exact words the spec
// names where it names them.
var (
	noHost      = answer{http.StatusBadRequest, "This request names no host."}
	unknownHost = answer{http.StatusNotFound, "No app on this host answers for that hostname."}
	misdirected = answer{http.StatusMisdirectedRequest, "This connection was opened for another hostname; open a new one for this host."}
	unreachable = answer{http.StatusBadGateway, "This app did not answer."}
	notRunning  = answer{http.StatusServiceUnavailable, "This app is not running."}
	starting    = answer{http.StatusServiceUnavailable, "This app is starting; try again in a moment."}

	tooManyConnections = answer{http.StatusServiceUnavailable, "This host has too many connections open; try again in a moment."}
	tooManyFromClient  = answer{http.StatusServiceUnavailable, "Your address has too many connections open to this host; close some and try again."}
	appBusy            = answer{http.StatusServiceUnavailable, "This app has as many requests open as it takes; try again in a moment."}

	noH2C = answer{http.StatusHTTPVersionNotSupported, "This host does not speak HTTP/2 without TLS (h2c); use HTTP/1.1, or HTTP/2 over TLS."}
)

// statusClientLeft is the status logged for a request whose client went
// away before it had an answer (nginx's 499); nothing is written.
const statusClientLeft = 499

// statusNoAnswer is the status logged for an HTTP/2 stream the proxy
// reset without an answer (nginx's 444, "close the connection without a
// response"): its connection was stopped.
const statusNoAnswer = 444

// bodyTimedOut is the 408 for a request body that did not go on within d.
func bodyTimedOut(d time.Duration) answer {
	return answer{http.StatusRequestTimeout, "This request's body did not go on within " + d.String() + "."}
}

// wakeFailed is the 503 for a wake that did not bring the app up.
func wakeFailed(err error) answer {
	return answer{http.StatusServiceUnavailable, "This app could not be woken: " + strings.TrimSuffix(err.Error(), ".") + "."}
}

// answerTimedOut is the 504 for an app that began no answer within d.
func answerTimedOut(d time.Duration) answer {
	return answer{http.StatusGatewayTimeout, "This app did not begin its answer within " + d.String() + "."}
}

// reply writes a as plain text with a trailing newline.
func reply(w http.ResponseWriter, a answer) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.text + "\n"))
}
