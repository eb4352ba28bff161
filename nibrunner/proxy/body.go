package proxy

import (
	"bufio"
	"errors"
	"io"
	"time"

	"alpnib.dev/nibrunner/proxy/meter"
)

var errBadChunk = errors.New("malformed chunked body")

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
					return io.ErrUnexpectedEOF
				}
				return err
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
// to and including its trailer section.
func pumpChunked(dst *bufio.Writer, src *bufio.Reader, f *flow) error {
	for {
		line, err := nextLine(dst, src)
		if err != nil {
			return err
		}
		size, ok := chunkSize(line)
		if !ok {
			return errBadChunk
		}
		if err := writeLine(dst, line); err != nil {
			return err
		}
		f.add(len(line) + 2)
		if size == 0 {
			// Trailer fields, then the empty line.
			for {
				line, err := nextLine(dst, src)
				if err != nil {
					return err
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
		if err := pump(dst, src, size, f); err != nil {
			return err
		}
		line, err = nextLine(dst, src)
		if err != nil {
			return err
		}
		if len(line) != 0 {
			return errBadChunk
		}
		if err := writeLine(dst, nil); err != nil {
			return err
		}
		f.add(2)
	}
}

// nextLine reads a line of chunk framing, flushing dst first when the
// read would wait.
func nextLine(dst *bufio.Writer, src *bufio.Reader) ([]byte, error) {
	if src.Buffered() == 0 {
		if err := dst.Flush(); err != nil {
			return nil, err
		}
	}
	line, err := readLine(src, 1)
	if err == io.EOF || err == errMalformed {
		return nil, io.ErrUnexpectedEOF
	}
	return line, err
}

func writeLine(dst *bufio.Writer, line []byte) error {
	_, _ = dst.Write(line)
	_, err := dst.WriteString("\r\n")
	return err
}

// chunkSize reads a chunk-size line's hex size, ignoring extensions.
func chunkSize(line []byte) (int64, bool) {
	var n int64
	digits := 0
	for _, c := range line {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		case c == ';' || c == ' ' || c == '\t':
			return n, digits > 0
		default:
			return 0, false
		}
		if digits++; digits > 15 {
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, digits > 0
}
