package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/store/s3test"
	"github.com/minio/minio-go/v7"
)

// faulty is an http.RoundTripper in front of the S3 server that fails one
// kind of request (request names it: "part 2", "complete", "put") the
// first times times it is sent (always when times < 0), and counts every
// kind it sees.
type faulty struct {
	next   http.RoundTripper
	target string
	fault  fault

	mu    sync.Mutex
	times int
	seen  map[string]int
	bytes int64 // the bodies of the requests seen
}

// fault is what a failed request gets.
type fault struct {
	name    string
	respond func(next http.RoundTripper, r *http.Request) (*http.Response, error)
}

// request names what an S3 request of an upload is.
func request(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "part " + q.Get("partNumber")
	case r.Method == http.MethodPost && q.Has("uploads"):
		return "create"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return "complete"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return "abort"
	case r.Method == http.MethodPut:
		return "put"
	}
	return r.Method
}

func (f *faulty) RoundTrip(r *http.Request) (*http.Response, error) {
	what := request(r)
	f.mu.Lock()
	f.seen[what]++
	f.bytes += max(r.ContentLength, 0)
	fail := what == f.target && f.times != 0
	if fail && f.times > 0 {
		f.times--
	}
	f.mu.Unlock()
	if fail {
		return f.fault.respond(f.next, r)
	}
	return f.next.RoundTrip(r)
}

func (f *faulty) sent(what string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[what]
}

// consume reads and closes the body of a request that is not passed on,
// as a server that took it and then failed would.
func consume(r *http.Request) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
}

// answer is an S3 error response to r.
func answer(r *http.Request, status int, code string) *http.Response {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the test</Message></Error>`, code)
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/xml"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}
}

func refuse(status int, code string) fault {
	return fault{fmt.Sprintf("%d %s", status, code), func(_ http.RoundTripper, r *http.Request) (*http.Response, error) {
		consume(r)
		return answer(r, status, code), nil
	}}
}

var (
	connectionReset = fault{"connection reset", func(_ http.RoundTripper, r *http.Request) (*http.Response, error) {
		consume(r)
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}}
	// answerLost passes the request on, so the server does what it asks,
	// and loses the answer.
	answerLost = fault{"500 after the server did it", func(next http.RoundTripper, r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return answer(r, http.StatusInternalServerError, "InternalError"), nil
	}}
)

type partRig struct {
	s     *S3
	proxy *faulty
	clock *clock.Manual
	srv   *s3test.Server
}

// rig is an S3 store on versitygw (bucket "exports", prefix host-1, parts
// of 5 MiB) behind a faulty proxy, on a manual clock.
func rig(t testing.TB, target string, times int, f fault) partRig {
	t.Helper()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "exports")
	next, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &faulty{next: next, target: target, times: times, fault: f, seen: map[string]int{}}
	s, err := newS3(context.Background(), "s3://exports/host-1", proxy)
	if err != nil {
		t.Fatal(err)
	}
	s.SetPartSize(5 << 20)
	clk := clock.NewManual(time.Unix(1_800_000_000, 0))
	s.SetClock(clk)
	return partRig{s: s, proxy: proxy, clock: clk, srv: srv}
}

// advance moves the clock past every retry's wait, as soon as it is
// armed, until the test ends.
func (r partRig) advance(t testing.TB) {
	armed := r.clock.Armed()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-armed:
				armed = r.clock.Armed()
				r.clock.Advance(time.Minute)
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// uploads lists the incomplete multipart uploads in the bucket.
func (r partRig) uploads(t *testing.T) []minio.ObjectMultipartInfo {
	t.Helper()
	res, err := minio.Core{Client: r.srv.Client}.ListMultipartUploads(ctx(t), "exports", "", "", "", "", 1000)
	if err != nil {
		t.Fatalf("list the incomplete uploads: %v", err)
	}
	return res.Uploads
}

// stored checks that the object at key holds want.
func (r partRig) stored(t *testing.T, key string, want []byte) {
	t.Helper()
	rc, size, err := r.s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	if size != int64(len(want)) || !bytes.Equal(got, want) {
		t.Fatalf("%s holds %d bytes (announced %d), not the %d uploaded", key, len(got), size, len(want))
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// threeParts is a stream of three 5 MiB parts, the last one short.
const threeParts = 12<<20 + 123

func TestAPartThatFailsOnceIsSentAgainAloneAndTheObjectIsWhole(t *testing.T) {
	for _, f := range []fault{connectionReset, refuse(503, "SlowDown"), refuse(429, "TooManyRequests"),
		refuse(400, "RequestTimeout"), answerLost} {
		t.Run(f.name, func(t *testing.T) {
			r := rig(t, "part 2", 1, f)
			r.advance(t)
			data := random(t, threeParts)
			n, err := r.s.PutStream(ctx(t), "e/x.tar.gz", bytes.NewReader(data))
			if err != nil || n != int64(len(data)) {
				t.Fatalf("PutStream = %d, %v; want %d bytes stored", n, err, len(data))
			}
			for what, want := range map[string]int{"part 1": 1, "part 2": 2, "part 3": 1, "part 4": 0, "create": 1, "complete": 1, "abort": 0} {
				if got := r.proxy.sent(what); got != want {
					t.Errorf("%s sent %d times, want %d", what, got, want)
				}
			}
			if st := r.s.Stats(); st != (S3Stats{Retries: 1}) {
				t.Errorf("stats %+v, want one retry", st)
			}
			r.stored(t, "e/x.tar.gz", data)
			if u := r.uploads(t); len(u) != 0 {
				t.Errorf("%d uploads left incomplete: %+v", len(u), u)
			}
		})
	}
}

func TestACompleteCallThatFailsOnceIsSentAgainAndTheObjectIsWhole(t *testing.T) {
	for _, f := range []fault{refuse(503, "SlowDown"), answerLost} {
		t.Run(f.name, func(t *testing.T) {
			r := rig(t, "complete", 1, f)
			r.advance(t)
			data := random(t, threeParts)
			if _, err := r.s.PutStream(ctx(t), "e/x.tar.gz", bytes.NewReader(data)); err != nil {
				t.Fatalf("PutStream: %v", err)
			}
			for what, want := range map[string]int{"part 1": 1, "part 2": 1, "part 3": 1, "complete": 2, "abort": 0} {
				if got := r.proxy.sent(what); got != want {
					t.Errorf("%s sent %d times, want %d", what, got, want)
				}
			}
			r.stored(t, "e/x.tar.gz", data)
		})
	}
}

// then is a fault that answers its first request with a and the next ones
// with b.
func then(a, b fault) fault {
	var mu sync.Mutex
	n := 0
	return fault{a.name + ", then " + b.name, func(next http.RoundTripper, r *http.Request) (*http.Response, error) {
		mu.Lock()
		n++
		f := b
		if n == 1 {
			f = a
		}
		mu.Unlock()
		return f.respond(next, r)
	}}
}

// A complete call whose answer was lost did complete the upload; sent
// again, S3 (and MinIO) answer NoSuchUpload, and the object there, with
// the ETag those parts make, says it was done. versitygw completes it
// twice instead, which the test above covers.
func TestACompleteCallAnsweredNoSuchUploadWhenSentAgainChecksTheObject(t *testing.T) {
	noUpload := refuse(404, "NoSuchUpload")
	t.Run("it was completed", func(t *testing.T) {
		r := rig(t, "complete", 2, then(answerLost, noUpload))
		r.advance(t)
		data := random(t, threeParts)
		if _, err := r.s.PutStream(ctx(t), "e/x.tar.gz", bytes.NewReader(data)); err != nil {
			t.Fatalf("PutStream: %v", err)
		}
		if got := r.proxy.sent("HEAD"); got != 1 {
			t.Errorf("the object was looked at %d times, want once", got)
		}
		r.stored(t, "e/x.tar.gz", data)
	})
	t.Run("it was not", func(t *testing.T) {
		r := rig(t, "complete", 2, then(refuse(503, "SlowDown"), noUpload))
		r.advance(t)
		_, err := r.s.PutStream(ctx(t), "e/x.tar.gz", bytes.NewReader(random(t, threeParts)))
		if err == nil || !strings.Contains(err.Error(), "complete") {
			t.Fatalf("PutStream whose complete call found no upload and no object: %v", err)
		}
		if _, err := r.s.Stat(ctx(t), "e/x.tar.gz"); !errors.Is(err, ErrNotFound) {
			t.Errorf("stat: %v, want ErrNotFound", err)
		}
	})
}

func TestAStreamWithinOnePartGoesUpAsOnePutRetriedAlone(t *testing.T) {
	r := rig(t, "put", 1, connectionReset)
	r.advance(t)
	data := random(t, 1<<20)
	if n, err := r.s.PutStream(ctx(t), "e/small", bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("PutStream = %d, %v", n, err)
	}
	if put, create := r.proxy.sent("put"), r.proxy.sent("create"); put != 2 || create != 0 {
		t.Errorf("sent %d PUTs and created %d multipart uploads; want 2 PUTs (one retried) and none", put, create)
	}
	r.stored(t, "e/small", data)
}

func TestAPutThatAlwaysFailsStoresNothingAndSaysSo(t *testing.T) {
	r := rig(t, "put", -1, refuse(500, "InternalError"))
	r.advance(t)
	_, err := r.s.PutStream(ctx(t), "e/small", bytes.NewReader(random(t, 1<<20)))
	if err == nil || !strings.Contains(err.Error(), `"e/small"`) || !strings.Contains(err.Error(), fmt.Sprintf("all %d attempts", DefaultRetry.Attempts)) {
		t.Fatalf("PutStream through a PUT that always fails: %v", err)
	}
	if got := r.proxy.sent("put"); got != DefaultRetry.Attempts {
		t.Errorf("PUT sent %d times, want %d", got, DefaultRetry.Attempts)
	}
	if _, err := r.s.Stat(ctx(t), "e/small"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stat: %v, want ErrNotFound", err)
	}
}

func TestAPartThatAlwaysFailsAbortsTheUploadNamingKeyPartAndAttempts(t *testing.T) {
	r := rig(t, "part 2", -1, refuse(503, "SlowDown"))
	r.advance(t)
	_, err := r.s.PutStream(ctx(t), "e/x.tar.gz", bytes.NewReader(random(t, threeParts)))
	if err == nil {
		t.Fatal("PutStream through a part that always fails: no error")
	}
	for _, want := range []string{`"e/x.tar.gz"`, "part 2", fmt.Sprintf("all %d attempts", DefaultRetry.Attempts), "aborted", "SlowDown"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if got := r.proxy.sent("part 2"); got != DefaultRetry.Attempts {
		t.Errorf("part 2 sent %d times, want %d", got, DefaultRetry.Attempts)
	}
	if got := r.proxy.sent("part 1"); got != 1 {
		t.Errorf("part 1, which went up, sent %d times", got)
	}
	if got := r.proxy.sent("abort"); got != 1 {
		t.Errorf("%d abort calls, want 1", got)
	}
	if st := r.s.Stats(); st != (S3Stats{Retries: uint64(DefaultRetry.Attempts - 1), GaveUp: 1}) {
		t.Errorf("stats %+v", st)
	}
	if u := r.uploads(t); len(u) != 0 {
		t.Errorf("%d uploads left incomplete: %+v", len(u), u)
	}
	if _, err := r.s.Stat(ctx(t), "e/x.tar.gz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stat of the failed object: %v, want ErrNotFound", err)
	}
}

func TestAPartRefusedByTheStoreIsNotRetried(t *testing.T) {
	r := rig(t, "part 2", -1, refuse(403, "AccessDenied"))
	_, err := r.s.PutStream(ctx(t), "e/x.tar.gz", bytes.NewReader(random(t, threeParts)))
	if err == nil || !strings.Contains(err.Error(), "part 2") || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("PutStream through a refused part: %v", err)
	}
	if got := r.proxy.sent("part 2"); got != 1 {
		t.Errorf("refused part sent %d times, want 1", got)
	}
	if st := r.s.Stats(); st != (S3Stats{}) {
		t.Errorf("stats %+v, want no retries", st)
	}
	if u := r.uploads(t); len(u) != 0 {
		t.Errorf("%d uploads left incomplete: %+v", len(u), u)
	}
}

func TestAnUploadWaitingToRetryAPartEndsWithItsContext(t *testing.T) {
	r := rig(t, "part 2", -1, connectionReset)
	armed := r.clock.Armed()
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.s.PutStream(c, "e/x.tar.gz", bytes.NewReader(random(t, threeParts)))
		done <- err
	}()
	var err error
	select {
	case <-armed: // part 2 failed and waits on the clock, which does not move
		cancel()
		err = <-done
	case err = <-done:
		t.Fatalf("PutStream ended without waiting to retry part 2: %v", err)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "part 2") {
		t.Fatalf("PutStream cancelled while waiting to retry: %v", err)
	}
	if got := r.proxy.sent("part 2"); got != 1 {
		t.Errorf("part 2 sent %d times, want 1", got)
	}
	if u := r.uploads(t); len(u) != 0 {
		t.Errorf("%d uploads left incomplete: %+v", len(u), u)
	}
}

func TestOnlyTransientErrorsAreRetried(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	reset := &url.Error{Op: "Put", URL: "http://s3/x", Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}
	for _, c := range []struct {
		err  error
		ctx  context.Context
		want bool
	}{
		{reset, live, true},
		{fmt.Errorf("wrapped: %w", reset), live, true},
		{io.ErrUnexpectedEOF, live, true},
		{minio.ErrorResponse{StatusCode: 503, Code: "SlowDown"}, live, true},
		{minio.ErrorResponse{StatusCode: 500, Code: "InternalError"}, live, true},
		{minio.ErrorResponse{StatusCode: 502}, live, true},
		{minio.ErrorResponse{StatusCode: 429, Code: "TooManyRequests"}, live, true},
		{minio.ErrorResponse{StatusCode: 400, Code: "RequestTimeout"}, live, true},
		{minio.ErrorResponse{StatusCode: 403, Code: "AccessDenied"}, live, false},
		{minio.ErrorResponse{StatusCode: 404, Code: "NoSuchBucket"}, live, false},
		{minio.ErrorResponse{StatusCode: 404, Code: "NoSuchUpload"}, live, false},
		{minio.ErrorResponse{StatusCode: 400, Code: "EntityTooSmall"}, live, false},
		{&url.Error{Op: "Put", Err: x509.UnknownAuthorityError{}}, live, false},
		{reset, done, false},
		{context.Canceled, done, false},
	} {
		if got := transient(c.ctx, c.err); got != c.want {
			t.Errorf("transient(%v, ctx done %v) = %v", c.err, c.ctx.Err() != nil, got)
		}
	}
}

func TestARetryWaitsTheBackoffLessAtMostHalfOfIt(t *testing.T) {
	s := &S3{retry: DefaultRetry}
	for n := 1; n <= 10; n++ {
		full := backoff.Delay(DefaultRetry.Initial, DefaultRetry.Max, DefaultRetry.Factor, n)
		for range 50 {
			if d := s.delay(n); d < full/2 || d > full {
				t.Fatalf("wait before retry %d is %s, want within [%s, %s]", n, d, full/2, full)
			}
		}
	}
}

// BenchmarkAStreamWithAFlakyPart uploads 64 MiB in 16 MiB parts whose third
// part is lost once after the server read it: sent again alone, and, as
// before, the whole stream sent again by its job (the job's backoff left
// out). sent-MiB is what went over the wire.
func BenchmarkAStreamWithAFlakyPart(b *testing.B) {
	data := make([]byte, 64<<20)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		attempts int
	}{{"part retried alone", DefaultRetry.Attempts}, {"whole stream again", 1}} {
		b.Run(c.name, func(b *testing.B) {
			r := rig(b, "", 0, answerLost)
			r.s.SetPartSize(DefaultPartSize)
			r.s.SetRetry(Retry{Attempts: c.attempts, Initial: DefaultRetry.Initial, Max: DefaultRetry.Max, Factor: DefaultRetry.Factor})
			r.advance(b)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := range b.N {
				r.proxy.mu.Lock()
				r.proxy.target, r.proxy.times = "part 3", 1
				r.proxy.mu.Unlock()
				key := fmt.Sprintf("bench/%d", i)
				_, err := r.s.PutStream(context.Background(), key, bytes.NewReader(data))
				if err != nil && c.attempts == 1 {
					_, err = r.s.PutStream(context.Background(), key, bytes.NewReader(data))
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			r.proxy.mu.Lock()
			b.ReportMetric(float64(r.proxy.bytes)/float64(b.N)/(1<<20), "sent-MiB/op")
			r.proxy.mu.Unlock()
		})
	}
}
