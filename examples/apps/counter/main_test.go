package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestEachRequestCountsInMemoryAndLeavesALineOnDisk(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "greeting.txt"), []byte("seeded\n"), 0o644)
	c := &counter{dir: dir, hostname: "counter.example"}
	for i, want := range []string{
		"hello from counter.example, request #1 since boot, file says \"seeded\"; visits.log has 1 line\n",
		"hello from counter.example, request #2 since boot, file says \"seeded\"; visits.log has 2 lines\n",
	} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != 200 || rec.Body.String() != want {
			t.Fatalf("request %d: %d %q", i+1, rec.Code, rec.Body)
		}
	}
	// A new process (a cold boot) starts counting again; the file does not.
	fresh := &counter{dir: dir, hostname: "counter.example"}
	rec := httptest.NewRecorder()
	fresh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if want := "hello from counter.example, request #1 since boot, file says \"seeded\"; visits.log has 3 lines\n"; rec.Body.String() != want {
		t.Fatalf("after a restart: %q", rec.Body)
	}
}
