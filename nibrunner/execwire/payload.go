package execwire

import (
	"encoding/binary"
	"fmt"
)

// Spec is what a TypeOpen frame asks the guest to run.
type Spec struct {
	// Argv is the program and its arguments; Argv[0] is looked up in the
	// app's root, never in a shell.
	Argv []string
	// Env adds K=V entries to the app's environment (later wins).
	Env []string
	// Workdir is the working directory inside the app's root ("" for the
	// app's own).
	Workdir string
	// UID and GID run the program; the host sets 65534 unless told.
	UID, GID uint32
	// TTY asks for a pseudo-terminal of Rows × Cols.
	TTY        bool
	Rows, Cols uint16
	// Stdin: the client sends stdin (-i); otherwise the program's stdin
	// is /dev/null.
	Stdin bool
}

const (
	specTTY   = 1 << 0
	specStdin = 1 << 1
	// maxSpecStrings bounds Argv and Env.
	maxSpecStrings = 1024
)

// AppendSpec encodes s: flags (1), uid (4), gid (4), rows (2), cols (2),
// workdir, then argc (2) strings and envc (2) strings, each string a
// uint16 length and its bytes.
func AppendSpec(b []byte, s Spec) ([]byte, error) {
	if len(s.Argv) == 0 {
		return b, fmt.Errorf("%w: an exec names no program", ErrFrame)
	}
	if len(s.Argv) > maxSpecStrings || len(s.Env) > maxSpecStrings {
		return b, fmt.Errorf("%w: more than %d arguments or environment entries", ErrFrame, maxSpecStrings)
	}
	var flags byte
	if s.TTY {
		flags |= specTTY
	}
	if s.Stdin {
		flags |= specStdin
	}
	start := len(b)
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, s.UID)
	b = binary.BigEndian.AppendUint32(b, s.GID)
	b = binary.BigEndian.AppendUint16(b, s.Rows)
	b = binary.BigEndian.AppendUint16(b, s.Cols)
	var err error
	if b, err = appendString(b, s.Workdir); err != nil {
		return b, err
	}
	for _, list := range [][]string{s.Argv, s.Env} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(list)))
		for _, v := range list {
			if b, err = appendString(b, v); err != nil {
				return b, err
			}
		}
	}
	if len(b)-start > MaxPayload {
		return b[:start], fmt.Errorf("%w: the program, arguments and environment take %d bytes, more than %d", ErrFrame, len(b)-start, MaxPayload)
	}
	return b, nil
}

func appendString(b []byte, v string) ([]byte, error) {
	if len(v) > MaxPayload {
		return b, fmt.Errorf("%w: a string of %d bytes", ErrFrame, len(v))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...), nil
}

// ParseSpec decodes a TypeOpen payload.
func ParseSpec(p []byte) (Spec, error) {
	d := decoder{p: p}
	flags := d.u8()
	s := Spec{TTY: flags&specTTY != 0, Stdin: flags&specStdin != 0}
	s.UID, s.GID = d.u32(), d.u32()
	s.Rows, s.Cols = d.u16(), d.u16()
	s.Workdir = d.str()
	s.Argv = d.strs()
	s.Env = d.strs()
	if d.err != nil {
		return Spec{}, fmt.Errorf("%w: open: %v", ErrFrame, d.err)
	}
	if len(d.p) != 0 {
		return Spec{}, fmt.Errorf("%w: open: %d bytes after the environment", ErrFrame, len(d.p))
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return Spec{}, fmt.Errorf("%w: open names no program", ErrFrame)
	}
	return s, nil
}

type decoder struct {
	p   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.p) < n {
		d.err = fmt.Errorf("%d bytes where %d more were due", len(d.p), n)
		return nil
	}
	v := d.p[:n]
	d.p = d.p[n:]
	return v
}

func (d *decoder) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) str() string { return string(d.take(int(d.u16()))) }

func (d *decoder) strs() []string {
	n := int(d.u16())
	if n > maxSpecStrings {
		d.err = fmt.Errorf("%d strings, more than %d", n, maxSpecStrings)
		return nil
	}
	var out []string
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}

// AppendData appends a TypeData payload: the stream, then data.
func AppendData(b []byte, s Stream, data []byte) []byte {
	return append(append(b, byte(s)), data...)
}

// ParseData decodes a TypeData payload; data aliases p.
func ParseData(p []byte) (Stream, []byte, error) {
	if len(p) < 1 {
		return 0, nil, fmt.Errorf("%w: data frame without a stream", ErrFrame)
	}
	s := Stream(p[0])
	if s > Stderr {
		return 0, nil, fmt.Errorf("%w: data on unknown %s", ErrFrame, s)
	}
	return s, p[1:], nil
}

// AppendWindow appends a TypeWindow payload granting n bytes on s.
func AppendWindow(b []byte, s Stream, n uint32) []byte {
	return binary.BigEndian.AppendUint32(append(b, byte(s)), n)
}

// ParseWindow decodes a TypeWindow payload.
func ParseWindow(p []byte) (Stream, uint32, error) {
	if len(p) != 5 || Stream(p[0]) > Stderr {
		return 0, 0, fmt.Errorf("%w: window payload of %d bytes", ErrFrame, len(p))
	}
	return Stream(p[0]), binary.BigEndian.Uint32(p[1:]), nil
}

// AppendResize appends a TypeResize payload.
func AppendResize(b []byte, rows, cols uint16) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(b, rows), cols)
}

// ParseResize decodes a TypeResize payload.
func ParseResize(p []byte) (rows, cols uint16, err error) {
	if len(p) != 4 {
		return 0, 0, fmt.Errorf("%w: resize payload of %d bytes", ErrFrame, len(p))
	}
	return binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]), nil
}

// MaxSignal is the highest signal number a TypeSignal frame may carry
// (Linux's SIGRTMAX).
const MaxSignal = 64

// ParseSignal decodes a TypeSignal payload.
func ParseSignal(p []byte) (int, error) {
	if len(p) != 1 || p[0] == 0 || p[0] > MaxSignal {
		return 0, fmt.Errorf("%w: signal payload %v", ErrFrame, p)
	}
	return int(p[0]), nil
}

// Exit is a session's end. Code is the program's exit status (128+N for
// signal N, as a shell reports it); Error, when set, says why the program
// never ran (Code is then 126 or 127, as a shell's are).
type Exit struct {
	Code  int32
	Error string
}

// Exit codes for a program that never ran, as POSIX shells use them.
const (
	CodeCannotRun = 126
	CodeNotFound  = 127
)

// AppendExit appends a TypeExit payload, cutting Error to fit a frame.
func AppendExit(b []byte, e Exit) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(e.Code))
	msg := e.Error
	if len(msg) > MaxPayload-4 {
		msg = msg[:MaxPayload-4]
	}
	return append(b, msg...)
}

// ParseExit decodes a TypeExit payload.
func ParseExit(p []byte) (Exit, error) {
	if len(p) < 4 {
		return Exit{}, fmt.Errorf("%w: exit payload of %d bytes", ErrFrame, len(p))
	}
	return Exit{Code: int32(binary.BigEndian.Uint32(p)), Error: string(p[4:])}, nil
}
