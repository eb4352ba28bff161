package volume_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/volume"
	"alpnib.dev/nibrunner/volume/volumetest"
)

// bigTarGz is a tar.gz of one incompressible file of n bytes, so its
// fetch and its unpack each take many reads.
func bigTarGz(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "blob", Mode: 0o644, Size: int64(n), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(b)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitPhase waits until p reaches ph (the seed runs in another goroutine).
func waitPhase(t *testing.T, p *volume.Progress, ph volume.Phase, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for p.Now().Phase < ph {
		select {
		case err := <-done:
			t.Fatalf("the converge ended before phase %d: %v", ph, err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the seed never reached phase %d: %+v", ph, p.Now())
		}
	}
}

func TestASeedInterruptedWhileFormattingResumesWithoutFetchingAgain(t *testing.T) {
	f := newFixture(t)
	archive := bigTarGz(t, 1<<20)
	c := f.put(t, "seeds/big.tar.gz", archive)
	c.DestinationPath = "/"
	// The first daemon's mke2fs never ends: it is stopped halfway.
	hang := filepath.Join(t.TempDir(), "mke2fs")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.local.Mke2fs = hang
	p := &volume.Progress{}
	cctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		_, err := f.local.Converge(cctx, volume.Spec{VolumeID: "v", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c, Progress: p})
		done <- err
	}()
	waitPhase(t, p, volume.Formatting, done)
	if now := p.Now(); now.Fetched != int64(len(archive)) || now.Total != int64(len(archive)) || now.Unpacked != 1<<20 || now.Earlier != nil {
		t.Fatalf("progress at formatting = %+v; want the whole archive (%d bytes) fetched and 1 MiB unpacked, no earlier attempt", now, len(archive))
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted converge returned %v", err)
	}

	// The next daemon opens the same folder with a working mke2fs.
	gated := &volumetest.Gated{Store: f.store, After: 1 << 62}
	l, err := volume.NewLocal(f.local.Dir, gated)
	if err != nil {
		t.Fatal(err)
	}
	p2 := &volume.Progress{}
	v, err := l.Converge(ctx(t), volume.Spec{VolumeID: "v", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c, Progress: p2})
	if err != nil {
		t.Fatal(err)
	}
	e := p2.Now().Earlier
	if e == nil || !e.Resumed || e.Fetched != int64(len(archive)) {
		t.Fatalf("earlier = %+v; want the interrupted attempt's whole archive resumed", e)
	}
	if n := gated.Gets.Load(); n != 0 {
		t.Fatalf("the resumed seed fetched the archive %d times; want none", n)
	}
	if v.Seeded == nil || v.Seeded.Bytes != 1<<20 {
		t.Fatalf("seeded = %+v; want the 1 MiB blob", v.Seeded)
	}
	if left, _ := filepath.Glob(filepath.Join(l.Dir, ".seed-*")); len(left) != 0 {
		t.Fatalf("the made volume left %v", left)
	}
}

func TestASeedInterruptedWhileFetchingFetchesAgainFromTheStartAndSaysHowFarItCame(t *testing.T) {
	f := newFixture(t)
	archive := bigTarGz(t, 1<<20)
	c := f.put(t, "seeds/big.tar.gz", archive)
	half := int64(len(archive) / 2)
	gated := &volumetest.Gated{Store: f.store, After: half}
	l, err := volume.NewLocal(f.local.Dir, gated)
	if err != nil {
		t.Fatal(err)
	}
	p := &volume.Progress{}
	cctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		_, err := l.Converge(cctx, volume.Spec{VolumeID: "v", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c, Progress: p})
		done <- err
	}()
	select {
	case <-gated.Blocked():
	case err := <-done:
		t.Fatalf("the converge ended before its fetch was held: %v", err)
	}
	if now := p.Now(); now.Phase != volume.Fetching || now.Fetched != half || now.Total != int64(len(archive)) {
		t.Fatalf("progress = %+v; want fetching, %d of %d bytes", now, half, len(archive))
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted converge returned %v", err)
	}

	again := &volumetest.Gated{Store: f.store, After: 1 << 62}
	l2, err := volume.NewLocal(f.local.Dir, again)
	if err != nil {
		t.Fatal(err)
	}
	p2 := &volume.Progress{}
	if _, err := l2.Converge(ctx(t), volume.Spec{VolumeID: "v", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c, Progress: p2}); err != nil {
		t.Fatal(err)
	}
	e := p2.Now().Earlier
	if e == nil || e.Resumed || e.Fetched != half {
		t.Fatalf("earlier = %+v; want an attempt that fetched %d bytes, fetched again", e, half)
	}
	if n := again.Gets.Load(); n != 1 {
		t.Fatalf("fetched %d times; want once, from the start", n)
	}
}

func TestAFailedSeedLeavesNothingForTheNextAttemptToResume(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	c.Digest = "0000000000000000000000000000000000000000000000000000000000000000"
	p := &volume.Progress{}
	if _, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "v", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c, Progress: p}); err == nil {
		t.Fatal("a seed of the wrong digest made a volume")
	}
	if left, _ := filepath.Glob(filepath.Join(f.local.Dir, ".seed-*")); len(left) != 0 {
		t.Fatalf("the failed seed left %v", left)
	}
}
