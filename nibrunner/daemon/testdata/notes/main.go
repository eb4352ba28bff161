// Command notes is the tenant of the daemon's end-to-end QEMU test: a
// static file server over its working directory (the volume) that can
// also write a file there, and that reports a token drawn at start with a
// count of requests, so a test can tell the same process from a new one.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
)

func main() {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		fmt.Fprintln(os.Stderr, "draw the token:", err)
		os.Exit(1)
	}
	token := hex.EncodeToString(b[:])
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_/token", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d\n", token, hits.Add(1))
	})
	mux.HandleFunc("PUT /_/files/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = os.WriteFile(filepath.Base(r.PathValue("name")), body, 0o644)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.Handle("/", http.FileServer(http.Dir(".")))
	if err := http.ListenAndServe(":"+os.Getenv("PORT"), mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
