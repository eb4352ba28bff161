package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestAPlainLineEveryFewSecondsWhenNotATerminal(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	var b bytes.Buffer
	m := newMeter(&b, "building the guest kernel", "files compiled", 0, false, c.now)
	for range 12 {
		c.t = c.t.Add(time.Second)
		m.Add(100)
	}
	m.Done()
	want := "building the guest kernel: 500 files compiled, 5s\n" +
		"building the guest kernel: 1000 files compiled, 10s\n" +
		"building the guest kernel: done, 1200 files compiled in 12s\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestATerminalGetsABarRedrawnInPlace(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	var b bytes.Buffer
	m := newMeter(&b, "seeding vol", "MiB", 200, true, c.now)
	c.t = c.t.Add(time.Second)
	m.Add(50)
	m.Add(50) // within the redraw interval: nothing
	c.t = c.t.Add(time.Second)
	m.Add(100)
	m.Done()
	lines := strings.Split(b.String(), "\r")
	if len(lines) != 4 || !strings.Contains(lines[1], "50 of 200 MiB, 1s [=======") || !strings.Contains(lines[1], "25%") ||
		!strings.Contains(lines[3], "done, 200 of 200 MiB in 2s") || !strings.HasSuffix(b.String(), "100%\x1b[K\n") {
		t.Fatalf("%q", b.String())
	}
}

func TestANilWriterIsQuiet(t *testing.T) {
	m := New(nil, "x", "y", 0)
	m.Add(1)
	m.Done()
	var nilMeter *Meter
	nilMeter.Add(1)
	nilMeter.Done()
}

func TestATotalLearnedLaterCountsInTheLines(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	var b bytes.Buffer
	m := newMeter(&b, "registry copy: syncing", "versions", 0, false, c.now)
	m.SetTotal(400)
	c.t = c.t.Add(Every)
	m.Add(100)
	m.Done()
	want := "registry copy: syncing: 100 of 400 versions, 5s\n" +
		"registry copy: syncing: done, 100 of 400 versions in 5s\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
