package statuspage

import (
	"bytes"
	"net/http"
)

// Handler answers GET with the page of what input returns, never cached.
func Handler(input func(r *http.Request) Input) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		if err := Render(&b, Build(input(r))); err != nil {
			http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		// The page loads nothing: no script, style or image from anywhere.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
		w.Write(b.Bytes())
	})
}
