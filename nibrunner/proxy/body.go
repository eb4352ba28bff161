package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"time"

	"alpnib.dev/nibrunner/proxy/meter"
)

// badChunk is a chunked body's framing that RFC 9112 §7.1 does not
// allow: its sender's fault (a client's 400; an app's broken answer).
func badChunk(why string) *badMessage {
	return &badMessage{http.StatusBadRequest, "This request's chunked body is malformed: " + why + "."}
}

// errChunkLine is a chunk-size or trailer line longer than the reader's
// buffer (4 KiB from a client).
var errChunkLine = badChunk("a line of its framing is longer than 4 KiB")

// readError is a failure to read a body from its source (the client for
// a request, the app for an answer), told apart from one to write it on:
// the first is the sender's, the second the receiver's.
type readError struct{ err error }

func (e *readError) Error() string { return "read: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// flow counts the bytes of one body as they pass, and marks its app busy
// by them when m is set (a client's upload keeps its app awake).
type flow struct {
	n   int64
	m   *meter.Meter
	now func() time.Time
}

func (f *flow) add(n int) {
	f.n += int64(n)
	if f.m != nil {
		f.m.Touch(f.now())
	}
}

// pump copies n bytes from src to dst (n < 0: until src ends), flushing
// dst whenever src has nothing buffered, so a streamed body moves as it
// arrives and a small one goes in one write.
func pump(dst *bufio.Writer, src *bufio.Reader, n int64, f *flow) error {
	for n != 0 {
		if src.Buffered() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
			if _, err := src.Peek(1); err != nil {
				if err == io.EOF {
					if n < 0 {
						return nil
					}
					err = io.ErrUnexpectedEOF
				}
				return &readError{err}
			}
		}
		k := src.Buffered()
		if n >= 0 && int64(k) > n {
			k = int(n)
		}
		b, _ := src.Peek(k)
		if _, err := dst.Write(b); err != nil {
			return err
		}
		_, _ = src.Discard(k)
		if n > 0 {
			n -= int64(k)
		}
		f.add(k)
	}
	return nil
}

// pumpChunked copies one chunked body as it came, framing included, up
// to and including its trailer section, refusing what RFC 9112 §7.1
// does not allow: a size that is not hex, an extension that is not
// ;name or ;name=value, a line not ended by CRLF, data not followed by
// CRLF, a trailer line that is not a field, more than maxFields of them.
func pumpChunked(dst *bufio.Writer, src *bufio.Reader, f *flow) error {
	for {
		line, err := nextLine(dst, src)
		if err != nil {
			return err
		}
		size, why := chunkSize(line)
		if why != "" {
			return badChunk(why)
		}
		if err := writeLine(dst, line); err != nil {
			return err
		}
		f.add(len(line) + 2)
		if size == 0 {
			return pumpTrailers(dst, src, f)
		}
		if err := pump(dst, src, size, f); err != nil {
			return err
		}
		line, err = nextLine(dst, src)
		if err != nil {
			return err
		}
		if len(line) != 0 {
			return badChunk("a chunk's data is longer than its size says")
		}
		if err := writeLine(dst, nil); err != nil {
			return err
		}
		f.add(2)
	}
}

// pumpTrailers copies the trailer fields after the last chunk, then the
// empty line.
func pumpTrailers(dst *bufio.Writer, src *bufio.Reader, f *flow) error {
	for n := 0; ; n++ {
		line, err := nextLine(dst, src)
		if err != nil {
			return err
		}
		if len(line) > 0 {
			if why := trailerField(line); why != "" {
				return badChunk(why)
			}
			if n == maxFields {
				return badChunk("it has more than 256 trailer fields")
			}
		}
		if err := writeLine(dst, line); err != nil {
			return err
		}
		f.add(len(line) + 2)
		if len(line) == 0 {
			return nil
		}
	}
}

// trailerField says what is wrong with a trailer line ("" when it is a
// field line: a token, a colon, a value without control bytes).
func trailerField(line []byte) string {
	if line[0] == ' ' || line[0] == '\t' {
		return "a trailer line is folded"
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 || !isToken(line[:colon]) {
		return "a trailer line is not a field (a token, then a colon)"
	}
	if !validValue(line[colon+1:]) {
		return "a trailer field holds a control byte"
	}
	return ""
}

// nextLine reads a line of chunk framing, flushing dst first when the
// read would wait.
func nextLine(dst *bufio.Writer, src *bufio.Reader) ([]byte, error) {
	if src.Buffered() == 0 {
		if err := dst.Flush(); err != nil {
			return nil, err
		}
	}
	line, err := readLine(src)
	if err != nil {
		if _, ok := err.(*badMessage); !ok {
			err = &readError{err}
		}
		return nil, err
	}
	return line, nil
}

func writeLine(dst *bufio.Writer, line []byte) error {
	_, _ = dst.Write(line)
	_, err := dst.WriteString("\r\n")
	return err
}

// chunkSize reads a chunk-size line (RFC 9112 §7.1): 1*HEXDIG, then any
// extensions, each BWS ";" BWS token [BWS "=" BWS (token /
// quoted-string)]. It says what is wrong, "" when nothing is.
func chunkSize(line []byte) (n int64, why string) {
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			goto ext
		}
		if i == 15 {
			return 0, "a chunk size has more than 15 hex digits"
		}
		n = n<<4 | int64(d)
	}
ext:
	if i == 0 {
		return 0, "a chunk size is not a hex number"
	}
	for rest := line[i:]; len(rest) > 0; {
		rest = skipBWS(rest)
		if len(rest) == 0 || rest[0] != ';' {
			return 0, "a chunk size is followed by something not an extension (;name or ;name=value)"
		}
		rest = skipBWS(rest[1:])
		j := tokenEnd(rest)
		if j == 0 {
			return 0, "a chunk extension's name is not a token"
		}
		rest = skipBWS(rest[j:])
		if len(rest) == 0 || rest[0] != '=' {
			continue
		}
		rest = skipBWS(rest[1:])
		if len(rest) > 0 && rest[0] == '"' {
			j = quotedEnd(rest)
		} else {
			j = tokenEnd(rest)
		}
		if j == 0 {
			return 0, "a chunk extension's value is neither a token nor a quoted string"
		}
		rest = rest[j:]
	}
	return n, ""
}

func skipBWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// tokenEnd is the length of the token b begins with.
func tokenEnd(b []byte) int {
	i := 0
	for i < len(b) && tchar[b[i]] {
		i++
	}
	return i
}

// quotedEnd is the length of the quoted-string b begins with (RFC 9110
// §5.6.4), 0 when it is not one.
func quotedEnd(b []byte) int {
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i++; i == len(b) || !fieldByte[b[i]] {
				return 0
			}
		case !fieldByte[c]:
			return 0
		}
	}
	return 0
}
