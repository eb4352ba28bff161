package proxy

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"alpnib.dev/nibrunner/route"
)

// BenchmarkRequestsThroughTheProxy measures small GETs to a trivial app
// on loopback over kept-alive HTTP/1.1 connections from parallel clients:
// through the proxy, and straight to the app for comparison.
func BenchmarkRequestsThroughTheProxy(b *testing.B) {
	p := New(Options{Logf: b.Logf})
	addr := serve(b, p, ListenConfig{})
	app := httpServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	apply(b, p, routeTo("shop.example.com", "shop", app, route.Up))
	for _, bc := range []struct{ name, base string }{
		{"proxy", "http://" + addr},
		{"direct", fmt.Sprintf("http://127.0.0.1:%d", app)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := ask(c, bc.base, "shop.example.com")
					if err != nil || r.status != 200 {
						b.Errorf("%d %v", r.status, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
