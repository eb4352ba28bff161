// Command counter is the tenant the qemu tests run in a guest: a static HTTP
// server whose in-memory counter proves a restored guest kept its process
// state, and whose note file proves the volume kept its data.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if code := os.Getenv("EXIT_WITH"); code != "" {
		fmt.Println("counter exits with", code)
		c, _ := strconv.Atoi(code)
		os.Exit(c)
	}
	if n := os.Getenv("STREAM_BYTES"); n != "" {
		// Run by an exec: N bytes of output, for flow-control tests.
		left, _ := strconv.Atoi(n)
		buf := make([]byte, 64<<10)
		for left > 0 {
			w, err := os.Stdout.Write(buf[:min(left, len(buf))])
			if err != nil {
				os.Exit(1)
			}
			left -= w
		}
		return
	}
	if os.Getenv("PRINT_STATUS") == "1" {
		// Run by /exec as a set-user-ID copy of itself: who it became.
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("euid=%d\n%s", os.Geteuid(), b)
		return
	}
	if os.Getenv("SPIN") == "1" {
		// The CPU benchmark's tenant: a vCPU that never idles.
		go func() {
			for x := 0; ; x++ {
				_ = x
			}
		}()
	}
	var n atomic.Int64
	dir := os.Getenv("NIBRUN_DATA_DIR")
	var written atomic.Int64
	if os.Getenv("WRITE_FILES") == "1" {
		go writeForever(dir, &written)
	}
	http.HandleFunc("/written", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, written.Load())
	})
	http.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, n.Add(1))
	})
	http.HandleFunc("/note", func(w http.ResponseWriter, r *http.Request) {
		p := filepath.Join(dir, "note")
		if r.Method == http.MethodPut {
			b, _ := io.ReadAll(r.Body)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				http.Error(w, err.Error(), 500)
			}
			return
		}
		b, err := os.ReadFile(p)
		if err != nil {
			http.Error(w, err.Error(), 404)
			return
		}
		_, _ = w.Write(b)
	})
	http.HandleFunc("/whoami", func(w http.ResponseWriter, r *http.Request) {
		wd, _ := os.Getwd()
		shm := "no-shm"
		if err := os.WriteFile("/dev/shm/probe", []byte("x"), 0o600); err == nil {
			shm = "shm"
		}
		fmt.Fprintf(w, "%d:%d %s %s %s", os.Getuid(), os.Getgid(), wd, os.Getenv("NIBRUN_HOSTNAME"), shm)
	})
	// /hold?mib=N maps and writes N MiB and keeps it; /hold?mib=0 unmaps
	// it, which hands it back to the guest kernel at once (Go's own heap
	// would keep some for later): the balloon test frees it and watches
	// the host take the pages back.
	var held [][]byte
	var holdMu sync.Mutex
	http.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		mib, err := strconv.Atoi(r.URL.Query().Get("mib"))
		if err != nil || mib < 0 {
			http.Error(w, "mib: want a count of MiB", 400)
			return
		}
		holdMu.Lock()
		defer holdMu.Unlock()
		for _, b := range held {
			_ = syscall.Munmap(b)
		}
		held = nil
		for i := 0; i < mib; i++ {
			b, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
			if err != nil {
				http.Error(w, fmt.Sprintf("map MiB %d: %v", i, err), 500)
				return
			}
			for j := range b {
				b[j] = byte(i + j + 1)
			}
			held = append(held, b)
		}
		fmt.Fprint(w, len(held))
	})
	// /held checks that what /hold wrote is still there, byte for byte (a
	// restored guest must bring back its memory as it was).
	http.HandleFunc("/held", func(w http.ResponseWriter, r *http.Request) {
		holdMu.Lock()
		defer holdMu.Unlock()
		for i, b := range held {
			for j := range b {
				if b[j] != byte(i+j+1) {
					http.Error(w, fmt.Sprintf("MiB %d byte %d is %d, not %d", i, j, b[j], byte(i+j+1)), 500)
					return
				}
			}
		}
		fmt.Fprint(w, len(held))
	})
	http.HandleFunc("/proc/meminfo", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile("/proc/meminfo")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_, _ = w.Write(b)
	})
	// The density tests read the guest kernel's memory counters and
	// settings (/proc/vmstat, /sys/module/...) through it.
	http.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_, _ = w.Write(b)
	})
	// /exec?path=P runs P with PRINT_STATUS=1 and answers its output.
	http.HandleFunc("/exec", func(w http.ResponseWriter, r *http.Request) {
		cmd := exec.Command(r.URL.Query().Get("path"))
		cmd.Env = append(os.Environ(), "PRINT_STATUS=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			http.Error(w, fmt.Sprintf("%v: %s", err, out), 500)
			return
		}
		_, _ = w.Write(out)
	})
	// /say?text=T prints T on stdout, which the init mirrors to the
	// console.
	http.HandleFunc("/say", func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.URL.Query().Get("text"))
	})
	// /dial?addr=A opens a TCP connection to A (3 s at most) and says
	// "connected" or why not.
	http.HandleFunc("/dial", func(w http.ResponseWriter, r *http.Request) {
		c, err := net.DialTimeout("tcp", r.URL.Query().Get("addr"), 3*time.Second)
		if err != nil {
			fmt.Fprint(w, err)
			return
		}
		c.Close()
		fmt.Fprint(w, "connected")
	})
	fmt.Println("counter listening on", os.Getenv("PORT"))
	if err := http.ListenAndServe(":"+os.Getenv("PORT"), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writeForever keeps the volume busy for the checkpoint tests: it writes
// files of 64 KiB in a ring of 64, renames each into place, fsyncs every
// eighth, and counts the files written (a frozen filesystem stalls it).
func writeForever(dir string, written *atomic.Int64) {
	buf := make([]byte, 64<<10)
	_ = os.MkdirAll(filepath.Join(dir, "busy"), 0o755)
	for i := 0; ; i++ {
		for j := range buf {
			buf[j] = byte(i + j)
		}
		tmp := filepath.Join(dir, "busy", "tmp")
		f, err := os.Create(tmp)
		if err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return
		}
		_, _ = f.Write(buf)
		if i%8 == 0 {
			_ = f.Sync()
		}
		_ = f.Close()
		_ = os.Rename(tmp, filepath.Join(dir, "busy", strconv.Itoa(i%64)))
		written.Add(1)
	}
}
