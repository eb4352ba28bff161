package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
	"github.com/minio/minio-go/v7"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// backends runs f against every backend: a folder, and S3 via versitygw.
func backends(t *testing.T, f func(t *testing.T, s store.Store)) {
	t.Run("dir", func(t *testing.T) {
		s, err := store.Open(ctx(t), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		f(t, s)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		srv.SetEnv(t)
		srv.Bucket(t, "artifacts")
		s, err := store.Open(ctx(t), "s3://artifacts/layers/v1")
		if err != nil {
			t.Fatal(err)
		}
		f(t, s)
	})
}

func readAll(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	r, size, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != size {
		t.Fatalf("get %s announced %d bytes, gave %d", key, size, len(b))
	}
	return b
}

func TestWhatIsPutIsWhatIsGotBackWithItsSize(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		body := []byte("a layer's bytes")
		if err := s.Put(ctx(t), "apps/web/layer.sqfs", bytes.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s, "apps/web/layer.sqfs"); !bytes.Equal(got, body) {
			t.Fatalf("got %q, want %q", got, body)
		}
		info, err := s.Stat(ctx(t), "apps/web/layer.sqfs")
		if err != nil || info.Size != int64(len(body)) {
			t.Fatalf("stat = %+v, %v; want size %d", info, err, len(body))
		}
	})
}

func TestAPutReplacesTheObjectWhole(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		for _, body := range []string{"first, and longer", "second"} {
			if err := s.Put(ctx(t), "k", strings.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
		}
		if got := string(readAll(t, s, "k")); got != "second" {
			t.Fatalf("got %q after the second put", got)
		}
	})
}

func TestAPutOfUnknownSizeIsStored(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		if err := s.Put(ctx(t), "unknown", strings.NewReader("streamed"), -1); err != nil {
			t.Fatal(err)
		}
		if got := string(readAll(t, s, "unknown")); got != "streamed" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestAMissingKeyIsErrNotFoundForGetStatAndDelete(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		if _, _, err := s.Get(ctx(t), "nothing/here"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get: %v, want ErrNotFound", err)
		}
		if _, err := s.Stat(ctx(t), "nothing/here"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("stat: %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx(t), "nothing/here"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete: %v, want ErrNotFound", err)
		}
	})
}

func TestADeletedObjectIsGone(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		if err := s.Put(ctx(t), "gone", strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx(t), "gone"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx(t), "gone"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("stat after delete: %v", err)
		}
	})
}

func TestAShortReaderFailsThePutAndStoresNothing(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		if err := s.Put(ctx(t), "short", strings.NewReader("abc"), 10); err == nil {
			t.Fatal("a put announcing 10 bytes of a 3-byte reader succeeded")
		}
		if _, err := s.Stat(ctx(t), "short"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("stat after a failed put: %v, want ErrNotFound", err)
		}
	})
}

func TestAReaderLongerThanAnnouncedFailsThePut(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		if err := s.Put(ctx(t), "long", strings.NewReader("abcdef"), 3); err == nil {
			t.Fatal("a put announcing 3 bytes of a 6-byte reader succeeded")
		}
		if _, err := s.Stat(ctx(t), "long"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("stat after a failed put: %v, want ErrNotFound", err)
		}
	})
}

func TestKeysThatWouldLeaveTheStoreAreRefused(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store) {
		for _, key := range []string{"", "../escape", "a/../../b", "/etc/passwd", "a//b", "./a", "a/.", `a\..\b`, strings.Repeat("k", 1025)} {
			if err := s.Put(ctx(t), key, strings.NewReader("x"), 1); err == nil {
				t.Errorf("put %q succeeded", key)
			}
			if _, _, err := s.Get(ctx(t), key); err == nil || errors.Is(err, store.ErrNotFound) {
				t.Errorf("get %q: %v, want a refusal", key, err)
			}
		}
	})
}

func TestASymlinkInsideTheFolderCannotReachOutsideIt(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx(t), "link/secret"); err == nil {
		t.Fatal("get through a symlink out of the folder succeeded")
	}
	if err := s.Put(ctx(t), "link/planted", strings.NewReader("x"), 1); err == nil {
		t.Fatal("put through a symlink out of the folder succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Fatal("a file was written outside the folder")
	}
}

func TestAFailedPutLeavesNoTemporaryFileBehind(t *testing.T) {
	dir := t.TempDir()
	s, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Put(ctx(t), "a/b", strings.NewReader("abc"), 99)
	entries, _ := os.ReadDir(filepath.Join(dir, "a"))
	if len(entries) != 0 {
		t.Fatalf("folder holds %v after a failed put", entries)
	}
}

func TestOpenRefusesWhatIsNeitherAnAbsoluteFolderNorS3(t *testing.T) {
	for _, u := range []string{"", "relative/path", "http://example.com/x", "s3://", "s3://user:pw@bucket/p", "s3://bucket/../x"} {
		if _, err := store.Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

func TestALargeS3PutGoesUpInPartsAndComesBackWhole(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "big")
	s, err := store.NewS3(ctx(t), "s3://big/p")
	if err != nil {
		t.Fatal(err)
	}
	s.SetPartSize(5 << 20)
	body := make([]byte, 11<<20+17)
	_, _ = rand.Read(body)
	if err := s.Put(ctx(t), "blob", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "blob"); !bytes.Equal(got, body) {
		t.Fatal("the object read back differs from what was put")
	}
	st, err := srv.Client.StatObject(ctx(t), "big", "p/blob", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(st.ETag, "-3") {
		t.Fatalf("ETag %q: want a 3-part multipart upload's (…-3)", st.ETag)
	}
}

func TestAnS3StoreWithoutCredentialsIsRefusedByTheServer(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "private")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	s, err := store.Open(ctx(t), "s3://private")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx(t), "x", strings.NewReader("x"), 1); err == nil {
		t.Fatal("a put with the wrong secret succeeded")
	}
}
