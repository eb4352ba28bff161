package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
)

// maxHead bounds a request's or response's line and headers together, as
// net/http's DefaultMaxHeaderBytes does (1 MiB there; 64 KiB is what nginx
// allows with its largest buffers, and plenty for a browser).
const maxHead = 64 << 10

var (
	errHeadTooLarge = errors.New("the header is larger than 64 KiB")
	errMalformed    = errors.New("malformed HTTP head")
)

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
	chunked       bool
	close         bool // Connection: close, or HTTP/1.0 without keep-alive
	keepAlive     bool // Connection: keep-alive
	upgrade       bool // Connection: upgrade with an Upgrade header
	expect        bool // Expect: 100-continue
	connOther     bool // Connection lists fields besides close, keep-alive, upgrade
	host          span // the Host field's value (requests)
	hosts         int  // how many Host fields
}

func (h *head) bytes(s span) []byte { return h.buf[s.from:s.to] }

// read reads one head from r: the start line, the fields, the empty line.
// Blank lines before a request are skipped, as RFC 9112 §2.2 allows. A
// line may be longer than r's buffer (a big Cookie, say); the whole head
// is bounded by maxHead.
func (h *head) read(r *bufio.Reader) error {
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
			return errMalformed // obsolete line folding: refused, as RFC 9112 §5.2 allows
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || bytes.ContainsAny(line[:colon], " \t") {
			return errMalformed
		}
		vs, ve := colon+1, len(line)
		for vs < ve && (line[vs] == ' ' || line[vs] == '\t') {
			vs++
		}
		for ve > vs && (line[ve-1] == ' ' || line[ve-1] == '\t') {
			ve--
		}
		f := int32(from)
		h.fields = append(h.fields, field{span{f, f + int32(colon)}, span{f + int32(vs), f + int32(ve)}})
	}
}

// readLine returns the next line without its CRLF (or bare LF). The slice
// is valid until the next read from r.
func readLine(r *bufio.Reader, sofar int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errHeadTooLarge
	}
	if err != nil {
		if len(line) > 0 || sofar > 0 {
			return nil, errMalformed // cut off mid-head
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseRequest splits the request line and reads the fields the proxy
// acts on.
func (h *head) parseRequest() error {
	line := h.buf[:bytes.IndexByte(h.buf, '\n')]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return errMalformed
	}
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp2 <= sp1+1 {
		return errMalformed
	}
	h.first = [3]span{{0, int32(sp1)}, {int32(sp1 + 1), int32(sp2)}, {int32(sp2 + 1), int32(len(line))}}
	minor, ok := httpVersion(h.bytes(h.first[2]))
	if !ok {
		return errMalformed
	}
	h.minor = minor
	return h.parseFields(true)
}

// parseResponse splits the status line and reads the fields the proxy
// acts on.
func (h *head) parseResponse() error {
	line := h.buf[:bytes.IndexByte(h.buf, '\n')]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 || len(line) < sp1+4 {
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

func (h *head) parseFields(request bool) error {
	h.contentLength, h.chunked, h.close, h.keepAlive, h.upgrade, h.expect, h.connOther = -1, false, false, false, false, false, false
	h.host, h.hosts = span{}, 0
	hasUpgrade, connUpgrade := false, false
	for _, f := range h.fields {
		name, value := h.bytes(f.name), h.bytes(f.value)
		switch {
		case bytes.EqualFold(name, hdrContentLength):
			n, ok := parseLength(value)
			if !ok || (h.contentLength >= 0 && h.contentLength != n) {
				return errMalformed
			}
			h.contentLength = n
		case bytes.EqualFold(name, hdrTransferEncoding):
			// Only chunked framing is understood; it must come last.
			last := value
			if i := bytes.LastIndexByte(value, ','); i >= 0 {
				last = bytes.TrimSpace(value[i+1:])
			}
			if !bytes.EqualFold(last, tokChunked) {
				return errMalformed
			}
			h.chunked = true
		case bytes.EqualFold(name, hdrConnection):
			forTokens(value, func(tok []byte) {
				switch {
				case bytes.EqualFold(tok, tokClose):
					h.close = true
				case bytes.EqualFold(tok, tokKeepAlive):
					h.keepAlive = true
				case bytes.EqualFold(tok, tokUpgrade):
					connUpgrade = true
				default:
					h.connOther = true
				}
			})
		case bytes.EqualFold(name, hdrUpgrade):
			hasUpgrade = len(value) > 0
		case request && bytes.EqualFold(name, hdrHost):
			h.host = f.value
			h.hosts++
		case request && bytes.EqualFold(name, hdrExpect):
			h.expect = bytes.EqualFold(value, tok100Continue)
		}
	}
	if h.chunked {
		// RFC 9112 §6.3: Transfer-Encoding overrides Content-Length; a
		// message with both is a smuggling attempt as often as not, so the
		// proxy never forwards the Content-Length.
		h.contentLength = -1
	}
	if h.minor == 0 && !h.keepAlive {
		h.close = true
	}
	h.upgrade = hasUpgrade && connUpgrade
	return nil
}

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
// fields of h: a header the sender meant for this hop only.
func (h *head) listedIn(name []byte) bool {
	if !h.connOther {
		return false
	}
	found := false
	for _, f := range h.fields {
		if bytes.EqualFold(h.bytes(f.name), hdrConnection) {
			forTokens(h.bytes(f.value), func(tok []byte) {
				if bytes.EqualFold(tok, name) {
					found = true
				}
			})
		}
	}
	return found
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
		return bytes.EqualFold(name, hdrTE)
	case 10:
		return bytes.EqualFold(name, hdrConnection) || bytes.EqualFold(name, hdrKeepAlive)
	case 16:
		return bytes.EqualFold(name, hdrProxyConnection)
	case 7:
		return bytes.EqualFold(name, hdrUpgrade)
	}
	return false
}
