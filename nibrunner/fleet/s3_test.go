package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/store/s3test"
)

func TestAnS3ObjectLargerThanADocumentIsRefusedNamingItsSize(t *testing.T) {
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
	p := &Poller{Source: obj.Store, Key: obj.Key, URL: url, Interval: time.Second}
	if doc, ok, err := p.Poll(ctx); !ok || err != nil || string(doc.Data) != `{"v":1}` {
		t.Fatalf("first poll: %v %v %+v", ok, err, doc)
	}
	size := int64(desired.MaxDocumentBytes + 4096)
	if err := obj.Store.PutSmall(ctx, obj.Key, make([]byte, size), "application/json"); err != nil {
		t.Fatal(err)
	}
	doc, _, err := p.Poll(ctx)
	var big *TooLargeError
	if !errors.As(err, &big) || big.Size != size || big.URL != url {
		t.Fatalf("err = %v, want a TooLargeError for %s of %d bytes", err, url, size)
	}
	if !doc.Status() || !strings.HasPrefix(doc.Problem, big.Error()) {
		t.Fatalf("the poll handed %+v; want only why", doc)
	}
}
