package guestimage

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"alpnib.dev/internal/progress"
)

// A kernel build's output is counted object by object as it streams (in
// writes that split lines anywhere), and its end is kept for the error.
func TestTheKernelBuildsOutputIsCountedAndItsEndKept(t *testing.T) {
	var shown bytes.Buffer
	m := progress.New(&shown, "building the guest kernel", "objects built", 0)
	o := &buildOutput{m: m}
	out := "  SYNC    include/config/auto.conf\n  CC      init/main.o\n  AS      arch/x86/entry/entry_64.o\n" +
		"  CC      kernel/fork.o\nIn file included from x.c:1:\n  LD      vmlinux.o\n  AR      lib/lib.a\nerror: the end\n"
	for i := 0; i < len(out); i += 7 { // writes that split lines
		o.Write([]byte(out[i:min(i+7, len(out))]))
	}
	m.Done()
	if got := shown.String(); got != "building the guest kernel: done, 5 objects built in 0s\n" {
		t.Fatalf("shown %q", got)
	}
	if !strings.HasSuffix(lastLines(o.tail), "error: the end") {
		t.Fatalf("tail %q", lastLines(o.tail))
	}
}

func TestProgressIsQuietUnlessAsked(t *testing.T) {
	if progressOut(context.Background()) != nil {
		t.Fatal("a build under a plain context writes progress")
	}
	var b bytes.Buffer
	stage(WithProgress(context.Background(), &b), "configuring it")
	if b.String() != "building the guest kernel: configuring it\n" {
		t.Fatalf("%q", b.String())
	}
}
