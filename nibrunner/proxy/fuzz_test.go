package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequestHead reads arbitrary bytes as a request head. What the
// parser accepts, the head it forwards is read by net/http's parser as
// exactly one request with the same method, target, Host and framing,
// with nothing left over; and reading that forwarded head again gives
// the same.
func FuzzRequestHead(f *testing.F) {
	for _, c := range smugglingCorpus {
		f.Add([]byte(c.request))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h := &h1conn{p: &Proxy{}, client: []byte("127.0.0.1"), id: []byte("id")}
		r := bufio.NewReader(bytes.NewReader(in))
		if err := h.req.read(r); err != nil {
			return
		}
		if err := h.req.parseRequest(); err != nil {
			return
		}
		req := &h.req
		if req.hosts != 1 {
			return // refused by serveOne
		}
		host, target := req.bytes(req.host), req.bytes(req.first[1])
		if abs, ah, path := absoluteForm(target); abs {
			host, target = ah, path
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		h.writeRequestHead(w, target, host)
		_ = w.Flush()
		forwarded := out.String()

		gr, err := http.ReadRequest(bufio.NewReader(strings.NewReader(forwarded)))
		if err != nil {
			t.Fatalf("net/http refuses the head we forward: %v\n%q", err, forwarded)
		}
		if gr.Method != string(req.bytes(req.first[0])) || gr.RequestURI != string(target) || gr.Host != string(host) {
			t.Fatalf("net/http reads %s %s host %q; we routed %s %s host %q\n%q", gr.Method, gr.RequestURI, gr.Host, req.bytes(req.first[0]), target, host, forwarded)
		}
		switch {
		case req.chunked:
			if len(gr.TransferEncoding) != 1 || gr.TransferEncoding[0] != "chunked" {
				t.Fatalf("we read chunked, net/http %v\n%q", gr.TransferEncoding, forwarded)
			}
		case req.contentLength >= 0:
			if gr.ContentLength != req.contentLength {
				t.Fatalf("we read a length of %d, net/http %d\n%q", req.contentLength, gr.ContentLength, forwarded)
			}
		default:
			if gr.ContentLength > 0 || len(gr.TransferEncoding) > 0 {
				t.Fatalf("we read no body, net/http %d %v\n%q", gr.ContentLength, gr.TransferEncoding, forwarded)
			}
		}
		var again head
		if err := again.read(bufio.NewReader(strings.NewReader(forwarded))); err != nil {
			t.Fatalf("our own forwarded head is refused: %v\n%q", err, forwarded)
		}
		if err := again.parseRequest(); err != nil {
			t.Fatalf("our own forwarded head is refused: %v\n%q", err, forwarded)
		}
		if again.chunked != req.chunked || again.contentLength != req.contentLength || !bytes.Equal(again.bytes(again.host), host) {
			t.Fatalf("our forwarded head reads differently\n%q", forwarded)
		}
	})
}

// FuzzChunkedBody reads arbitrary bytes as a chunked body. What the
// parser passes on, net/http reads as one whole chunked body that ends
// exactly where ours did: no byte of it left over to be read as the
// next request.
func FuzzChunkedBody(f *testing.F) {
	for _, c := range smugglingCorpus {
		if i := strings.Index(c.request, "\r\n\r\n"); i >= 0 && strings.Contains(strings.ToLower(c.request[:i]), "transfer-encoding") {
			f.Add([]byte(c.request[i+4:]))
		}
	}
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("3;a=b;c=\"d\\\"e\"\r\nabc\r\n0\r\nX-T: v\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		src := bufio.NewReaderSize(bytes.NewReader(in), 4<<10)
		err := pumpChunked(w, src, &flow{})
		_ = w.Flush()
		if err != nil {
			var b *badMessage
			var re *readError
			if !errors.As(err, &b) && !errors.As(err, &re) {
				t.Fatalf("an error that is neither the sender's framing nor a read: %v", err)
			}
			return
		}
		body := out.Bytes()
		msg := "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + string(body)
		gr := bufio.NewReader(strings.NewReader(msg))
		req, err := http.ReadRequest(gr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(req.Body); err != nil {
			t.Fatalf("net/http refuses the chunked body we pass on: %v\n%q", err, body)
		}
		if n := gr.Buffered(); n > 0 {
			rest, _ := gr.Peek(n)
			t.Fatalf("net/http leaves %q of the body we passed on: a request to come\n%q", rest, body)
		}
	})
}
