package qemu

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// tenantLogFile is the tenant's output as the host received it over the
// control channel, in the app's runtime folder; tenantLogMax bounds it
// before it is rotated to tenantLogFile+".1" (one old file kept), so a
// chatty tenant cannot fill the host's disk whatever the daemon does.
const (
	tenantLogFile = "tenant.log"
	tenantLogMax  = 8 << 20
)

// tenantLog appends lines of tenant output with a timestamp and stream.
// The file is opened per write batch lazily and kept open; it survives the
// guest (a wake or a restart appends to it).
type tenantLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
	size int64
}

func (l *tenantLog) write(stream, data string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return
		}
		st, _ := f.Stat()
		l.f, l.size = f, st.Size()
	}
	if l.size >= tenantLogMax {
		l.f.Close()
		l.f = nil
		_ = os.Rename(l.path, l.path+".1")
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
		if err != nil {
			return
		}
		l.f, l.size = f, 0
	}
	n, _ := fmt.Fprintf(l.f, "%s %s %s", time.Now().UTC().Format(time.RFC3339Nano), stream, data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		m, _ := l.f.Write([]byte{'\n'})
		n += m
	}
	l.size += int64(n)
}

func (l *tenantLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
