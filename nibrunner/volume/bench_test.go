package volume_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/volume"
)

// BenchmarkCreateEmptyVolume measures making a 1 GiB sparse ext4 volume.
func BenchmarkCreateEmptyVolume(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireCommand(b, "mke2fs")
	l, err := volume.NewLocal(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := l.Converge(b.Context(), volume.Spec{VolumeID: fmt.Sprintf("v%d", i), SizeBytes: 1 << 30, State: volume.Present}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateSeededVolume measures making a 1 GiB volume seeded from a
// tar.gz of 2000 files of 4 KiB (8 MiB): fetch, verify, unpack, mke2fs -d.
func BenchmarkCreateSeededVolume(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireCommand(b, "mke2fs")
	st, err := store.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	body := bytes.Repeat([]byte("0123456789abcdef"), 256)
	for i := 0; i < 2000; i++ {
		_ = tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d%02d/f%04d", i%50, i), Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(body)
	}
	_ = tw.Close()
	_ = gz.Close()
	if err := st.Put(b.Context(), "seed.tar.gz", bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	c := &volume.Contents{Digest: hex.EncodeToString(sum[:]), ObjectKey: "seed.tar.gz", DestinationPath: "/srv/site"}
	l, err := volume.NewLocal(b.TempDir(), st)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Converge(b.Context(), volume.Spec{VolumeID: fmt.Sprintf("v%d", i), SizeBytes: 1 << 30, State: volume.Present, InitialContents: c}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrowVolume measures growing a volume by 256 MiB (e2fsck -f,
// truncate, resize2fs).
func BenchmarkGrowVolume(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireCommand(b, "mke2fs", "e2fsck", "resize2fs")
	l, err := volume.NewLocal(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	size := uint64(1 << 30)
	if _, err := l.Converge(b.Context(), volume.Spec{VolumeID: "g", SizeBytes: size, State: volume.Present}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		size += 256 << 20
		if _, err := l.Converge(b.Context(), volume.Spec{VolumeID: "g", SizeBytes: size, State: volume.Present}); err != nil {
			b.Fatal(err)
		}
	}
}
