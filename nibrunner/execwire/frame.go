// Package execwire is the byte format of an exec session between the host
// and a guest's init: binary frames that carry a program's start request,
// its stdin, stdout and stderr, window credit, terminal resizes, signals,
// the end of stdin and the exit status. It is pure: no I/O beyond the
// io.Reader and io.Writer it is handed, no goroutines.
//
// A frame is a 9-byte header followed by its payload:
//
//	type    uint8
//	session uint32, big-endian (many sessions share one channel)
//	length  uint32, big-endian (at most MaxPayload)
//	payload length bytes
//
// Output is credit-based: a sender writes at most as many data bytes on a
// stream as the receiver has granted with Window frames, so a reader that
// is slow never makes the sender, or anyone in between, buffer more than
// one window per stream.
package execwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Type names a frame.
type Type uint8

const (
	// TypeOpen starts a session (host → guest); the payload is a Spec.
	TypeOpen Type = 1
	// TypeData carries bytes of one Stream; the payload's first byte is
	// the Stream, the rest is data.
	TypeData Type = 2
	// TypeWindow grants credit on one Stream: Stream (1 byte) then the
	// number of bytes (uint32).
	TypeWindow Type = 3
	// TypeResize: the terminal's rows and columns (two uint16) (host →
	// guest, -t sessions).
	TypeResize Type = 4
	// TypeSignal: a signal number (1 byte) to deliver to the program
	// (host → guest).
	TypeSignal Type = 5
	// TypeCloseStdin: no more stdin (host → guest).
	TypeCloseStdin Type = 6
	// TypeExit ends a session (guest → host): Code (int32) then an
	// optional sentence saying why the program could not start.
	TypeExit Type = 7
	// TypeClose abandons a session (host → guest): the guest kills the
	// program and answers with TypeExit.
	TypeClose Type = 8
)

func (t Type) String() string {
	switch t {
	case TypeOpen:
		return "open"
	case TypeData:
		return "data"
	case TypeWindow:
		return "window"
	case TypeResize:
		return "resize"
	case TypeSignal:
		return "signal"
	case TypeCloseStdin:
		return "close-stdin"
	case TypeExit:
		return "exit"
	case TypeClose:
		return "close"
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// Stream names one byte stream of a session.
type Stream uint8

const (
	Stdin  Stream = 0
	Stdout Stream = 1
	Stderr Stream = 2
)

func (s Stream) String() string {
	switch s {
	case Stdin:
		return "stdin"
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("stream %d", uint8(s))
}

const (
	// HeaderSize is the size of a frame's header.
	HeaderSize = 9
	// MaxPayload bounds one frame's payload; a longer length is a broken
	// stream, not a frame to allocate for.
	MaxPayload = 32 << 10
	// MaxData is the most data one TypeData frame carries.
	MaxData = MaxPayload - 1
	// DefaultWindow is the credit a receiver grants per stream at the
	// start of a session.
	DefaultWindow = 256 << 10
	// MaxWindow bounds the credit outstanding on one stream; a grant
	// beyond it is a protocol error.
	MaxWindow = 4 << 20
)

// ErrFrame reports bytes that are not a well-formed frame.
var ErrFrame = errors.New("malformed exec frame")

// Frame is one decoded frame. Payload aliases the Reader's buffer until
// the next ReadFrame.
type Frame struct {
	Type    Type
	Session uint32
	Payload []byte
}

// AppendFrame appends the encoding of one frame to b.
func AppendFrame(b []byte, t Type, session uint32, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayload {
		return b, fmt.Errorf("%w: %s payload of %d bytes exceeds %d", ErrFrame, t, len(payload), MaxPayload)
	}
	b = append(b, byte(t))
	b = binary.BigEndian.AppendUint32(b, session)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...), nil
}

// Reader decodes frames from a byte stream with one reusable buffer.
type Reader struct {
	r   io.Reader
	buf []byte
}

// NewReader reads frames from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, buf: make([]byte, HeaderSize+MaxPayload)}
}

// ReadFrame returns the next frame. io.EOF means the stream ended between
// frames; io.ErrUnexpectedEOF that it ended inside one.
func (r *Reader) ReadFrame() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.buf[:HeaderSize]); err != nil {
		return Frame{}, err
	}
	f, n, err := parseHeader(r.buf[:HeaderSize])
	if err != nil {
		return Frame{}, err
	}
	if _, err := io.ReadFull(r.r, r.buf[HeaderSize:HeaderSize+n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	f.Payload = r.buf[HeaderSize : HeaderSize+n]
	return f, nil
}

// ParseFrame decodes one frame that fills b exactly (a frame carried
// inside another message).
func ParseFrame(b []byte) (Frame, error) {
	if len(b) < HeaderSize {
		return Frame{}, fmt.Errorf("%w: %d bytes is shorter than a header", ErrFrame, len(b))
	}
	f, n, err := parseHeader(b[:HeaderSize])
	if err != nil {
		return Frame{}, err
	}
	if len(b) != HeaderSize+n {
		return Frame{}, fmt.Errorf("%w: header says %d payload bytes, %d follow", ErrFrame, n, len(b)-HeaderSize)
	}
	f.Payload = b[HeaderSize:]
	return f, nil
}

func parseHeader(h []byte) (Frame, int, error) {
	t := Type(h[0])
	if t < TypeOpen || t > TypeClose {
		return Frame{}, 0, fmt.Errorf("%w: unknown type %d", ErrFrame, h[0])
	}
	n := binary.BigEndian.Uint32(h[5:9])
	if n > MaxPayload {
		return Frame{}, 0, fmt.Errorf("%w: %s payload of %d bytes exceeds %d", ErrFrame, t, n, MaxPayload)
	}
	return Frame{Type: t, Session: binary.BigEndian.Uint32(h[1:5])}, int(n), nil
}
