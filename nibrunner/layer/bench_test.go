package layer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/store"
)

// BenchmarkFetchAndVerify measures a cold fetch of a 64 MiB filesystem
// layer from a folder store: copy, sha256 while streaming, rename.
func BenchmarkFetchAndVerify(b *testing.B) {
	st, err := store.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	image := append([]byte("hsqs"), make([]byte, 64<<20)...)
	_, _ = rand.Read(image[4:])
	if err := st.Put(context.Background(), "l", bytes.NewReader(image), int64(len(image))); err != nil {
		b.Fatal(err)
	}
	spec := layer.Spec{Kind: layer.Filesystem, Digest: digest(image), ObjectKey: "l"}
	b.SetBytes(int64(len(image)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := layer.NewCache(b.TempDir(), st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Prepare(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackExecutable measures packing a 16 MiB program (half random,
// half compressible, like a static Go binary) into its squashfs.
func BenchmarkPackExecutable(b *testing.B) {
	testenv.RequireCommand(b, "mksquashfs")
	st, err := store.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	program := make([]byte, 16<<20)
	_, _ = rand.Read(program[:8<<20])
	if err := st.Put(context.Background(), "p", bytes.NewReader(program), int64(len(program))); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(program)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := layer.NewCache(b.TempDir(), st)
		if err != nil {
			b.Fatal(err)
		}
		spec := layer.Spec{Kind: layer.Executable, Digest: digest(program), ObjectKey: "p", DestinationPath: fmt.Sprintf("/app/bin%d", i)}
		if _, err := c.Prepare(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedPrepare is a start whose layer is already cached: one
// stat and one record read, no hashing.
func BenchmarkCachedPrepare(b *testing.B) {
	st, err := store.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	image := append([]byte("hsqs"), make([]byte, 64<<20)...)
	if err := st.Put(context.Background(), "l", bytes.NewReader(image), int64(len(image))); err != nil {
		b.Fatal(err)
	}
	c, err := layer.NewCache(b.TempDir(), st)
	if err != nil {
		b.Fatal(err)
	}
	spec := layer.Spec{Kind: layer.Filesystem, Digest: digest(image), ObjectKey: "l"}
	if _, err := c.Prepare(context.Background(), spec); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Prepare(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
	}
}
