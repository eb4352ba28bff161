package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

func TestAConditionalGetReadsAnObjectOnlyWhenItsETagChanged(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "fleet")
	s, err := store.NewS3(ctx(t), "s3://"+bucket+"/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetIfChanged(ctx(t), "h1.json", "", 1<<20); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing object: %v", err)
	}
	if err := s.PutSmall(ctx(t), "h1.json", []byte(`{"v":1}`), "application/json"); err != nil {
		t.Fatal(err)
	}
	b, etag, err := s.GetIfChanged(ctx(t), "h1.json", "", 1<<20)
	if err != nil || string(b) != `{"v":1}` || etag == "" {
		t.Fatalf("first read: %q %q %v", b, etag, err)
	}
	if _, same, err := s.GetIfChanged(ctx(t), "h1.json", etag, 1<<20); !errors.Is(err, store.ErrNotModified) || same != etag {
		t.Fatalf("unchanged: %q %v, want ErrNotModified", same, err)
	}
	s.PutSmall(ctx(t), "h1.json", []byte(`{"v":2}`), "application/json")
	b, etag2, err := s.GetIfChanged(ctx(t), "h1.json", etag, 1<<20)
	if err != nil || string(b) != `{"v":2}` || etag2 == etag {
		t.Fatalf("changed: %q %q %v", b, etag2, err)
	}
	if _, _, err := s.GetIfChanged(ctx(t), "h1.json", "", 3); err == nil || !strings.Contains(err.Error(), "at most 3") {
		t.Fatalf("an object over the limit: %v", err)
	}
}

// BenchmarkAPollOfAnUnchangedDocument is what each host pays per poll
// when nothing changed (a 304), beside a poll that reads a 130 KiB
// document (a host of 100 apps), against versitygw on loopback.
func BenchmarkAPollOfAnUnchangedDocument(b *testing.B) {
	srv := s3test.Start(b)
	srv.SetEnv(b)
	s, err := store.NewS3(context.Background(), "s3://"+srv.Bucket(b, "fleet")+"/hosts")
	if err != nil {
		b.Fatal(err)
	}
	doc := bytes.Repeat([]byte("x"), 130<<10)
	if err := s.PutSmall(context.Background(), "h1.json", doc, "application/json"); err != nil {
		b.Fatal(err)
	}
	_, etag, err := s.GetIfChanged(context.Background(), "h1.json", "", 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.GetIfChanged(context.Background(), "h1.json", etag, 1<<20); !errors.Is(err, store.ErrNotModified) {
				b.Fatal(err)
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.GetIfChanged(context.Background(), "h1.json", "", 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
}
