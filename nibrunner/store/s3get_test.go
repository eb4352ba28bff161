package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeObject serves one object the way S3 answers a GET: whole, or from
// a byte on (Range: bytes=N-, 206), with its ETag, and only while
// If-Match names it (else 412); HEAD gives the head alone. cut(i) says
// after how many bytes of its body the answer to GET i is cut (the
// connection dropped), or -1. gets are the GETs asked.
type fakeObject struct {
	mu   sync.Mutex
	body []byte
	etag string // quoted, as S3 sends it
	cut  func(i int) int
	gets []fakeGet
}

type fakeGet struct{ method, rng, ifMatch string }

func (f *fakeObject) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	i := len(f.gets) // the GETs before this one
	if r.Method == http.MethodGet {
		f.gets = append(f.gets, fakeGet{r.Method, r.Header.Get("Range"), r.Header.Get("If-Match")})
	}
	body, etag := f.body, f.etag
	f.mu.Unlock()
	if m := r.Header.Get("If-Match"); m != "" && m != etag {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`)
		return
	}
	from, status := 0, http.StatusOK
	h := w.Header()
	if rg := r.Header.Get("Range"); rg != "" {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		if err != nil || n >= len(body) {
			http.Error(w, "bad range "+rg, http.StatusRequestedRangeNotSatisfiable)
			return
		}
		from, status = n, http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(body)-1, len(body)))
	}
	part := body[from:]
	h.Set("ETag", etag)
	h.Set("Last-Modified", time.Unix(1700000000, 0).UTC().Format(http.TimeFormat))
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Length", strconv.Itoa(len(part)))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	n := len(part)
	if c := f.cut(i); c >= 0 && c < n {
		n = c
	}
	w.Write(part[:n])
	if n < len(part) {
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection is dropped mid-body
	}
}

// fakeStore is an S3 store whose only object, "big.bin", is f, retrying
// three times with next to no wait.
func fakeStore(t *testing.T, f *fakeObject) *S3 {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	s := storeAt(t, srv.URL)
	s.SetRetry(Retry{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Factor: 1})
	return s
}

// storeAt is the S3 store s3://bucket/prefix of the endpoint at url, with
// test credentials.
func storeAt(t *testing.T, url string) *S3 {
	t.Helper()
	t.Setenv("NIB_S3_ENDPOINT", url)
	t.Setenv("NIB_S3_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s, err := NewS3(context.Background(), "s3://bucket/prefix")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bigBody() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// A read whose connection is cut partway asks for the rest, from the
// first byte it lacks and only while the object is the one it began
// reading, and gives the caller the whole object; before, the caller got
// the cut's error and began again from the first byte.
func TestAnS3ReadCutPartwayAsksForTheRestAndGivesTheWholeObject(t *testing.T) {
	body := bigBody()
	f := &fakeObject{body: body, etag: `"0123abcd"`, cut: func(i int) int {
		if i == 0 {
			return 300000
		}
		return -1
	}}
	s := fakeStore(t, f)
	rc, size, err := s.Get(context.Background(), "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %d of %d bytes: %v", len(got), size, err)
	}
	if size != int64(len(body)) || !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes (size %d), want the %d of the object", len(got), size, len(body))
	}
	f.mu.Lock()
	gets := append([]fakeGet(nil), f.gets...)
	f.mu.Unlock()
	if len(gets) != 2 || gets[0].rng != "" || gets[1].rng != "bytes=300000-" || gets[1].ifMatch != `"0123abcd"` {
		t.Fatalf("requests %+v; want one whole, then one for bytes=300000- if it still matches \"0123abcd\"", gets)
	}
	if st := s.Stats(); st.Retries != 1 || st.GaveUp != 0 {
		t.Fatalf("stats %+v, want one retry", st)
	}
}

// An object replaced while it was read is not spliced from two objects:
// the request for the rest is refused (If-Match), and the read fails
// saying so.
func TestAnS3ObjectReplacedWhileReadFailsTheReadInsteadOfSplicingTwo(t *testing.T) {
	f := &fakeObject{body: bigBody(), etag: `"0123abcd"`}
	f.cut = func(i int) int {
		if i == 0 {
			f.etag = `"99999999"` // under f.mu: replaced once the first answer began
			return 1000
		}
		return -1
	}
	s := fakeStore(t, f)
	rc, _, err := s.Get(context.Background(), "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("read %d bytes, %v; want the read to fail saying the object changed", len(got), err)
	}
	if len(got) != 1000 {
		t.Fatalf("read %d bytes before the error, want the 1000 of the first answer", len(got))
	}
}

// A read whose requests for the rest keep failing without a byte gives
// up after the store's attempts, and says how far it got.
func TestAnS3ReadGivesUpAfterItsAttemptsFailInARow(t *testing.T) {
	f := &fakeObject{body: bigBody(), etag: `"0123abcd"`, cut: func(i int) int {
		if i == 0 {
			return 5000
		}
		return 0
	}}
	s := fakeStore(t, f)
	rc, _, err := s.Get(context.Background(), "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "on 3 requests in a row") || !strings.Contains(err.Error(), "after 5000 of its 1048576 bytes") {
		t.Fatalf("read ended with %v; want it to give up after 3 requests, at byte 5000", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Fatal("a failed read is not a missing object")
	}
	if st := s.Stats(); st.GaveUp != 1 || st.Retries != 2 {
		t.Fatalf("stats %+v, want 2 retries and one give-up", st)
	}
}
