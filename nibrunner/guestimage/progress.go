package guestimage

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"alpnib.dev/internal/progress"
)

type progressKey struct{}

// WithProgress has the long steps of a build under ctx (the guest
// kernel's, minutes) say how they are getting on, on w: a line redrawn on
// a terminal, a plain one every few seconds otherwise. Without it they
// are quiet.
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

// progressOut is the writer WithProgress gave ctx, or nil.
func progressOut(ctx context.Context) io.Writer {
	w, _ := ctx.Value(progressKey{}).(io.Writer)
	return w
}

// stage says, on ctx's progress writer, that a step begins.
func stage(ctx context.Context, format string, args ...any) {
	if w := progressOut(ctx); w != nil {
		fmt.Fprintf(w, "building the guest kernel: "+format+"\n", args...)
	}
}

// tailKeep is what a build's output keeps for its error: its end.
const tailKeep = 64 << 10

// buildOutput takes a kernel build's output: it counts each object kbuild
// says it made (its "  CC", "  AS", "  LD", "  AR" lines) on a meter, and
// keeps the output's end for the error a failed build gives.
type buildOutput struct {
	m    *progress.Meter
	line []byte // a line not ended yet
	tail []byte
}

func (o *buildOutput) Write(p []byte) (int, error) {
	o.tail = append(o.tail, p...)
	if len(o.tail) > 2*tailKeep {
		o.tail = append(o.tail[:0:0], o.tail[len(o.tail)-tailKeep:]...)
	}
	o.line = append(o.line, p...)
	for {
		i := bytes.IndexByte(o.line, '\n')
		if i < 0 {
			break
		}
		if built(o.line[:i]) {
			o.m.Add(1)
		}
		o.line = o.line[i+1:]
	}
	if len(o.line) > 4096 { // no kbuild line is this long: not one to count
		o.line = o.line[:0]
	}
	return len(p), nil
}

// built tells whether a kbuild output line says an object was made.
func built(l []byte) bool {
	for _, p := range [][]byte{[]byte("  CC "), []byte("  AS "), []byte("  LD "), []byte("  AR ")} {
		if bytes.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
