package fleet

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/store/s3test"
)

func TestAnS3ObjectLargerThanADocumentIsRefusedNamingItsSizeAndTheMirrorKept(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "fleet")
	url := "s3://" + bucket + "/hosts/h1/desired.json"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obj, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.Store.PutSmall(ctx, obj.Key, []byte(`{"v":1}`), "application/json"); err != nil {
		t.Fatal(err)
	}
	mirror := filepath.Join(t.TempDir(), MirrorName)
	p := &Poller{Source: obj.Store, Key: obj.Key, URL: url, Mirror: mirror, Interval: time.Second}
	if changed, err := p.Poll(ctx); !changed || err != nil {
		t.Fatalf("first poll: %v %v", changed, err)
	}
	size := int64(desired.MaxDocumentBytes + 4096)
	if err := obj.Store.PutSmall(ctx, obj.Key, make([]byte, size), "application/json"); err != nil {
		t.Fatal(err)
	}
	_, err = p.Poll(ctx)
	var big *TooLargeError
	if !errors.As(err, &big) || big.Size != size || big.URL != url {
		t.Fatalf("err = %v, want a TooLargeError for %s of %d bytes", err, url, size)
	}
	mirrorHolds(t, mirror, `{"v":1}`)
}
