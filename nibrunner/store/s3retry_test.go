package store

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// An S3 endpoint that answers every request with 503 is asked once per
// call: the caller's backoff is the only one, not minio-go's ten tries
// inside each of its attempts.
func TestAFailingS3RequestIsTriedOnceForTheCallersBackoffToRetry(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>busy</Message></Error>`))
	}))
	defer srv.Close()
	s := storeAt(t, srv.URL)
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"PutSmall", func() error {
			return s.PutSmall(context.Background(), "h.json", []byte(`{}`), "application/json")
		}},
		{"Stat", func() error { _, err := s.Stat(context.Background(), "h.json"); return err }},
	} {
		requests.Store(0)
		if err := call.do(); err == nil {
			t.Fatalf("%s against a 503: no error", call.name)
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("%s against a 503 sent %d requests, want 1", call.name, n)
		}
	}
}
