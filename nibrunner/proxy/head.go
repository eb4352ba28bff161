package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxHead bounds a request's or response's line and headers together, as
// net/http's DefaultMaxHeaderBytes does (1 MiB there; 64 KiB is what nginx
// allows with its largest buffers, and plenty for a browser).
const maxHead = 64 << 10

// maxFields bounds how many field lines one head may have: a browser
// sends about twenty; Apache's LimitRequestFields is 100. Past it the
// request is answered 431, as one past maxHead is.
const maxFields = 256

// maxConnTokens bounds how many fields one message's Connection fields
// may name for this hop, so that dropping them costs at most that many
// comparisons per field: linear in the head.
const maxConnTokens = 32

var (
	errHeadTooLarge  = errors.New("the header is larger than 64 KiB")
	errTooManyFields = errors.New("the header has more than 256 fields")
	errMalformed     = errors.New("malformed HTTP head")
)

// badMessage is a message the proxy will not pass on, with the status
// and the sentence a client is answered (an app's is its 502, and the
// sentence goes to the log).
type badMessage struct {
	status int
	text   string
}

func (b *badMessage) Error() string { return b.text }

// bad is a 400 with its sentence.
func bad(format string, args ...any) *badMessage {
	return &badMessage{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// shown is a client's name or token as quoted in a sentence: a token
// already (only printable ASCII), cut to 64 bytes.
func shown(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// field is one header line: name and value, trimmed, as offsets into the
// head's buffer (which may move while the head is read).
type field struct{ name, value span }

type span struct{ from, to int32 }

// head is one HTTP/1.x request or response head as read off the wire. It
// is reused from message to message on a connection: reading the next one
// resets it without allocating once its slices have grown.
type head struct {
	buf    []byte
	fields []field
	// The start line's three parts: method, target, version for a request;
	// version, status, reason for a response.
	first [3]span

	// What the proxy acts on, read from the fields.
	minor         int   // HTTP/1.<minor>
	status        int   // responses only
	contentLength int64 // -1 when absent
	lengthAt      int   // the index of the Content-Length field forwarded
	chunked       bool
	close         bool // Connection: close, or HTTP/1.0 without keep-alive
	keepAlive     bool // Connection: keep-alive
	upgrade       bool // Connection: upgrade with an Upgrade header
	expect        bool // Expect: 100-continue
	host          span // the Host field's value (requests)
	hosts         int  // how many Host fields
	// connTokens are the names the Connection fields list besides close,
	// keep-alive and upgrade: fields meant for this hop only. They point
	// into buf, which no longer moves once the head is read.
	connTokens [][]byte
}

func (h *head) bytes(s span) []byte { return h.buf[s.from:s.to] }

// read reads one head from r: the start line, the fields, the empty line.
// Blank lines before a request are skipped, as RFC 9112 §2.2 allows. A
// line may be longer than r's buffer (a big Cookie, say); the whole head
// is bounded by maxHead, and its field lines by maxFields.
func (h *head) read(r *bufio.Reader) error { return h.readMax(r, maxFields) }

// readMax is read with at most fields field lines.
func (h *head) readMax(r *bufio.Reader, fields int) error {
	h.buf = h.buf[:0]
	h.fields = h.fields[:0]
	for {
		from := len(h.buf)
		for {
			frag, err := r.ReadSlice('\n')
			if len(h.buf)+len(frag) > maxHead {
				return errHeadTooLarge
			}
			h.buf = append(h.buf, frag...)
			if err == nil {
				break
			}
			if err != bufio.ErrBufferFull {
				if len(h.buf) > 0 {
					// Cut off mid-head; the cause stays visible (a
					// deadline that passed is a timeout, not bad input).
					return fmt.Errorf("%w: %w", errMalformed, err)
				}
				return err
			}
		}
		// A line ends in CRLF, or a bare LF (RFC 9112 §2.2 lets a
		// recipient take one); a CR anywhere else is refused below, as a
		// control byte in the start line, a name or a value.
		end := len(h.buf) - 1 // the LF
		if end > from && h.buf[end-1] == '\r' {
			end--
		}
		line := h.buf[from:end]
		if len(line) == 0 {
			h.buf = h.buf[:from]
			if from == 0 {
				continue // leading CRLF
			}
			return nil
		}
		h.buf = append(h.buf[:end], '\n') // kept with a bare LF
		if from == 0 {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			// Obsolete line folding (RFC 9112 §5.2), or whitespace before
			// the first field (§2.2): refused, as both allow.
			return bad("This head folds a header line (a line that begins with a space or tab).")
		}
		if len(h.fields) >= fields {
			return errTooManyFields
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return bad("A header line has no colon.")
		}
		if !isToken(line[:colon]) {
			// RFC 9112 §5.1: no whitespace before the colon, and a name
			// is a token: ASCII letters, digits and !#$%&'*+-.^_`|~.
			return bad("A header name is not a token (ASCII letters, digits and !#$%%&'*+-.^_`|~, no space before the colon).")
		}
		vs, ve := colon+1, len(line)
		for vs < ve && (line[vs] == ' ' || line[vs] == '\t') {
			vs++
		}
		for ve > vs && (line[ve-1] == ' ' || line[ve-1] == '\t') {
			ve--
		}
		if !validValue(line[vs:ve]) {
			return bad("The %s field holds a control byte (CR, LF, NUL or another); RFC 9110 §5.5 forbids them.", shown(line[:colon]))
		}
		f := int32(from)
		h.fields = append(h.fields, field{span{f, f + int32(colon)}, span{f + int32(vs), f + int32(ve)}})
	}
}

// readLine returns the next line of chunked framing without its CRLF.
// The slice is valid until the next read from r. RFC 9112 §7.1 ends
// every such line in CRLF: a bare LF, or a CR inside, is refused.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errChunkLine
	}
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := len(line)
	if n < 2 || line[n-2] != '\r' {
		return nil, badChunk("a line of its framing ends in a bare LF, not CRLF")
	}
	return line[:n-2], nil
}

// parseRequest splits the request line and reads the fields the proxy
// acts on.
func (h *head) parseRequest() error {
	line := h.buf[:bytes.IndexByte(h.buf, '\n')]
	// RFC 9112 §3: method SP request-target SP HTTP-version, one space
	// each.
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 < 0 {
		return bad("The request line is not a method, a target and a version, one space apart.")
	}
	if !isToken(line[:sp1]) {
		return bad("The request's method is not a token.")
	}
	sp2 := sp1 + 1 + bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 <= sp1+1 {
		return bad("The request line is not a method, a target and a version, one space apart.")
	}
	minor, ok := httpVersion(line[sp2+1:])
	if !ok {
		return bad("The request line's version is not HTTP/1.0 or HTTP/1.1, after one space.")
	}
	target := line[sp1+1 : sp2]
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return bad("The request's target holds a control byte or a space.")
		}
	}
	switch {
	case target[0] == '/':
	case len(target) == 1 && target[0] == '*' && string(line[:sp1]) == "OPTIONS":
	default:
		if abs, host, _ := absoluteForm(target); !abs || !validHost(host) {
			return bad("The request's target is neither a path nor an http or https URL naming a host.")
		}
	}
	h.first = [3]span{{0, int32(sp1)}, {int32(sp1 + 1), int32(sp2)}, {int32(sp2 + 1), int32(len(line))}}
	h.minor = minor
	return h.parseFields(true)
}

// parseResponse splits the status line and reads the fields the proxy
// acts on.
func (h *head) parseResponse() error {
	line := h.buf[:bytes.IndexByte(h.buf, '\n')]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 || len(line) < sp1+4 || !validValue(line) {
		return errMalformed
	}
	minor, ok := httpVersion(line[:sp1])
	if !ok {
		return errMalformed
	}
	code := line[sp1+1 : sp1+4]
	status := 0
	for _, c := range code {
		if c < '0' || c > '9' {
			return errMalformed
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 || (len(line) > sp1+4 && line[sp1+4] != ' ') {
		return errMalformed
	}
	h.minor, h.status = minor, status
	h.first = [3]span{{0, int32(sp1)}, {int32(sp1 + 1), int32(sp1 + 4)}, {int32(min(sp1+5, len(line))), int32(len(line))}}
	return h.parseFields(false)
}

func httpVersion(v []byte) (minor int, ok bool) {
	if len(v) != 8 || string(v[:7]) != "HTTP/1." || v[7] < '0' || v[7] > '9' {
		return 0, false
	}
	return int(v[7] - '0'), true
}

// parseFields reads the fields the proxy acts on and refuses the framing
// RFC 9112 §6 says is faulty. One pass: each field costs a few
// comparisons of its name, so a head of many fields costs linear time.
func (h *head) parseFields(request bool) error {
	h.contentLength, h.lengthAt, h.chunked, h.close, h.keepAlive, h.upgrade, h.expect = -1, -1, false, false, false, false, false
	h.host, h.hosts = span{}, 0
	h.connTokens = h.connTokens[:0]
	hasUpgrade, connUpgrade := false, false
	encodings := 0
	var lastCoding []byte
	for i, f := range h.fields {
		name, value := h.bytes(f.name), h.bytes(f.value)
		switch {
		case equalFold(name, hdrContentLength):
			n, ok := parseLength(value)
			if !ok {
				return bad("The Content-Length field is not a decimal number of bytes.")
			}
			if h.contentLength >= 0 && h.contentLength != n {
				return bad("Two Content-Length fields of this message differ.")
			}
			if h.contentLength < 0 {
				h.lengthAt = i
			}
			h.contentLength = n
		case equalFold(name, hdrTransferEncoding):
			encodings++
			lastCoding = value
			if j := bytes.LastIndexByte(value, ','); j >= 0 {
				lastCoding = bytes.TrimSpace(value[j+1:])
			}
			if request && (encodings > 1 || !equalFold(value, tokChunked)) {
				// nginx answers 501 for a coding it does not know.
				return &badMessage{http.StatusNotImplemented, "This proxy reads no transfer coding but chunked, alone, in one Transfer-Encoding field."}
			}
		case equalFold(name, hdrConnection):
			var err error
			forTokens(value, func(tok []byte) {
				switch {
				case equalFold(tok, tokClose):
					h.close = true
				case equalFold(tok, tokKeepAlive):
					h.keepAlive = true
				case equalFold(tok, tokUpgrade):
					connUpgrade = true
				case equalFold(tok, hdrContentLength), equalFold(tok, hdrTransferEncoding), equalFold(tok, hdrHost):
					// The framing and the Host are never this hop's only:
					// dropping them would unframe the message at the app.
				case len(h.connTokens) == maxConnTokens:
					err = bad("The Connection fields of this message list more than %d names.", maxConnTokens)
				default:
					h.connTokens = append(h.connTokens, tok)
				}
			})
			if err != nil {
				return err
			}
		case equalFold(name, hdrUpgrade):
			hasUpgrade = len(value) > 0
		case request && equalFold(name, hdrHost):
			if !validHost(value) && len(value) > 0 {
				return bad("The Host field is not a host name, an IP address or either with a port.")
			}
			h.host = f.value
			h.hosts++
		case request && equalFold(name, hdrExpect):
			h.expect = equalFold(value, tok100Continue)
		}
	}
	if encodings > 0 {
		switch {
		case request && h.minor == 0:
			// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding
			// has faulty framing.
			return bad("Transfer-Encoding is not allowed in an HTTP/1.0 request.")
		case request && h.contentLength >= 0:
			// RFC 9112 §6.1 lets a server refuse both; nginx does.
			return bad("This request has both Content-Length and Transfer-Encoding; send one.")
		case !request && !equalFold(lastCoding, tokChunked):
			return errMalformed // a response the proxy cannot find the end of but by the close
		}
		h.chunked = true
		if h.contentLength >= 0 {
			// A response with both: Transfer-Encoding wins (RFC 9112
			// §6.3), the length is not forwarded, and the connection
			// it came on is not trusted with another request.
			h.contentLength, h.lengthAt, h.close = -1, -1, true
		}
	}
	if h.minor == 0 && !h.keepAlive {
		h.close = true
	}
	h.upgrade = hasUpgrade && connUpgrade
	return nil
}

// validHost reports whether a Host value or a URL's authority is a
// host name, an IP literal or either with a port: RFC 3986's reg-name
// characters, brackets and the colon, never '/', '@', a space or a
// control byte (which would make another request of it at the app).
func validHost(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if !hostByte[c] {
			return false
		}
	}
	return true
}

var hostByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = tchar[c] && c != '#' && c != '^' && c != '`' && c != '|'
	}
	for _, c := range "()*,;=:[]" {
		t[c] = true
	}
	return t
}()

// parseLength reads a Content-Length: decimal digits only, at most 18.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// forTokens calls fn with each comma-separated token of a list value.
func forTokens(v []byte, fn func([]byte)) {
	for len(v) > 0 {
		var tok []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			tok, v = v[:i], v[i+1:]
		} else {
			tok, v = v, nil
		}
		if tok = bytes.TrimSpace(tok); len(tok) > 0 {
			fn(tok)
		}
	}
}

// listedIn reports whether name is one of the tokens of the Connection
// fields of h: a header the sender meant for this hop only. At most
// maxConnTokens comparisons.
func (h *head) listedIn(name []byte) bool {
	for _, tok := range h.connTokens {
		if equalFold(tok, name) {
			return true
		}
	}
	return false
}

var (
	hdrConnection       = []byte("connection")
	hdrContentLength    = []byte("content-length")
	hdrTransferEncoding = []byte("transfer-encoding")
	hdrUpgrade          = []byte("upgrade")
	hdrHost             = []byte("host")
	hdrExpect           = []byte("expect")
	hdrKeepAlive        = []byte("keep-alive")
	hdrProxyConnection  = []byte("proxy-connection")
	hdrTE               = []byte("te")
	hdrXForwardedFor    = []byte("x-forwarded-for")
	hdrXForwardedHost   = []byte("x-forwarded-host")
	hdrXForwardedProto  = []byte("x-forwarded-proto")
	hdrXRequestID       = []byte("x-request-id")
	tokChunked          = []byte("chunked")
	tokClose            = []byte("close")
	tokKeepAlive        = []byte("keep-alive")
	tokUpgrade          = []byte("upgrade")
	tokTrailers         = []byte("trailers")
	tok100Continue      = []byte("100-continue")
)

// hopByHop reports whether a field named name must not cross the proxy
// (RFC 9110 §7.6.1), besides those the Connection field lists. Upgrade is
// handled by the caller; Transfer-Encoding is kept, since the proxy
// forwards chunked framing as it came.
func hopByHop(name []byte) bool {
	switch len(name) {
	case 2:
		return equalFold(name, hdrTE)
	case 10:
		return equalFold(name, hdrConnection) || equalFold(name, hdrKeepAlive)
	case 16:
		return equalFold(name, hdrProxyConnection)
	case 7:
		return equalFold(name, hdrUpgrade)
	}
	return false
}
