package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/guest"
)

// supervisor runs the tenant program and restarts it by the policy. As PID 1
// it is also every orphan's parent, so one reaper collects all exits and
// hands the tenant's own to the run loop (os/exec's Wait cannot be used: the
// reaper may collect the tenant first).
type supervisor struct {
	cfg  guest.Config
	root string
	ctl  *control

	mu     sync.Mutex
	pid    int           // the running tenant, 0 when none
	exits  chan int      // the tenant's exit codes
	stopCh chan struct{} // closed by a shutdown request
	once   sync.Once
	// watched are exec programs' exits, by pid.
	watched map[int]chan<- int
	// mirrored counts tenant output bytes mirrored on the console since
	// the last start.
	mirrored atomic.Int64
}

func newSupervisor(cfg guest.Config, root string, ctl *control) *supervisor {
	s := &supervisor{cfg: cfg, root: root, ctl: ctl, exits: make(chan int, 1), stopCh: make(chan struct{})}
	go s.reap()
	return s
}

func (s *supervisor) stop() { s.once.Do(func() { close(s.stopCh) }) }

// reap collects every exited child; the tenant's code goes to the run loop.
func (s *supervisor) reap() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD)
	tick := time.NewTicker(time.Second) // signals coalesce; poll as well
	for {
		select {
		case <-sig:
		case <-tick.C:
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			s.mu.Lock()
			mine := pid == s.pid
			if mine {
				s.pid = 0
			}
			watcher := s.watched[pid]
			delete(s.watched, pid)
			s.mu.Unlock()
			if watcher != nil {
				watcher <- exitCode(ws)
			}
			if mine {
				s.exits <- exitCode(ws)
			}
		}
	}
}

func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// start launches the tenant in its own session, with its output piped to
// the host, through the init's own binary (enterTenant): chrooted into the
// stacked root as 65534:65534 with no_new_privs and an empty bounding set.
func (s *supervisor) start() (int, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return 0, err
	}
	null, _ := os.Open("/dev/null")
	wd := s.cfg.WorkingDirectory
	if wd == "" {
		wd = "/"
	}
	attr := &os.ProcAttr{
		Env:   s.cfg.Environ(),
		Files: []*os.File{null, outW, errW},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}
	argv := append([]string{os.Args[0], enterTenantArg, s.root, wd, filepath.Clean(s.cfg.Program)}, s.cfg.Args...)
	s.mirrored.Store(0)
	s.mu.Lock()
	p, err := os.StartProcess("/proc/self/exe", argv, attr)
	if err == nil {
		s.pid = p.Pid
	}
	s.mu.Unlock()
	null.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return 0, err
	}
	go s.forward("stdout", outR)
	go s.forward("stderr", errR)
	pid := p.Pid
	// The reaper collects the exit with wait4; the handle (a pidfd) is
	// not needed and would leak one descriptor per restart.
	_ = p.Release()
	return pid, nil
}

// consoleMirrorLimit bounds how much tenant output one start mirrors on the
// serial console: the host keeps the console in a file for as long as the
// guest runs, and a chatty tenant must not fill the host's disk.
const consoleMirrorLimit = 1 << 20

// forward sends the tenant's output to the host in chunks and mirrors the
// first consoleMirrorLimit bytes of each start on the console.
func (s *supervisor) forward(stream string, r io.ReadCloser) {
	defer r.Close()
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if m := s.mirrored.Add(int64(n)); m <= consoleMirrorLimit {
				_, _ = os.Stdout.Write(buf[:n])
			} else if m-int64(n) <= consoleMirrorLimit {
				logf("the console stops mirroring %s's output here (1 MiB); it still goes to the host", s.cfg.Program)
			}
			s.ctl.send(guest.Message{Kind: guest.KindLog, Stream: stream, Data: string(buf[:n])})
		}
		if err != nil {
			return
		}
	}
}

// run is the restart loop; it returns only by powering the machine off.
func (s *supervisor) run() {
	pol := s.cfg.Restart
	restarts := 0
	var lastStart time.Time
	for {
		if !lastStart.IsZero() && time.Since(lastStart) >= backoff.Millis(pol.ResetAfterMs) {
			restarts = 0
		}
		lastStart = time.Now()
		pid, err := s.start()
		var code int
		if err != nil {
			logf("cannot start %s: %v", s.cfg.Program, err)
			s.ctl.send(guest.Message{Kind: guest.KindLog, Stream: "stderr", Data: fmt.Sprintf("nibrun-init: cannot start %s: %v\n", s.cfg.Program, err)})
			code = 127
		} else {
			s.ctl.send(guest.Message{Kind: guest.KindStarted, PID: pid, Restarts: restarts})
			select {
			case code = <-s.exits:
			case <-s.stopCh:
				s.shutdown()
			}
		}
		logf("%s exited with %d", s.cfg.Program, code)
		c := code
		s.ctl.send(guest.Message{Kind: guest.KindExited, ExitCode: &c, Restarts: restarts})
		if time.Since(lastStart) >= backoff.Millis(pol.ResetAfterMs) {
			restarts = 0
		}
		restarts++
		if restarts > pol.MaxRestarts {
			msg := fmt.Sprintf("out of restarts: %s exited with code %d after %d restarts", s.cfg.Program, code, pol.MaxRestarts)
			logf("%s", msg)
			s.ctl.send(guest.Message{Kind: guest.KindGaveUp, ExitCode: &c, Restarts: pol.MaxRestarts, Error: msg})
			s.ctl.flush(3 * time.Second)
			s.halt()
		}
		select {
		case <-time.After(pol.Delay(restarts)):
		case <-s.stopCh:
			s.shutdown()
		}
	}
}

// shutdown ends the tenant (SIGTERM to its session, SIGKILL after 5 s),
// writes the volume back and powers off.
func (s *supervisor) shutdown() {
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	if pid > 0 {
		_ = unix.Kill(-pid, unix.SIGTERM)
		select {
		case code := <-s.exits:
			logf("%s exited with %d on shutdown", s.cfg.Program, code)
			c := code
			s.ctl.send(guest.Message{Kind: guest.KindExited, ExitCode: &c})
		case <-time.After(5 * time.Second):
			_ = unix.Kill(-pid, unix.SIGKILL)
		}
	}
	s.halt()
}

// halt syncs, unmounts the root and the volume so the ext4 journal is
// clean, and powers off.
func (s *supervisor) halt() {
	unix.Sync()
	for _, m := range []string{"proc", "dev/shm", "dev", "sys", "etc/resolv.conf"} {
		_ = unix.Unmount(filepath.Join(s.root, m), unix.MNT_DETACH)
	}
	_ = unix.Unmount(s.root, 0)
	if err := unix.Unmount(mntVolume, 0); err != nil {
		_ = unix.Mount("", mntVolume, "", unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	s.ctl.flush(time.Second)
	powerOff()
}

// startWatched starts a child other than the tenant (an exec session's
// program) whose exit the reaper hands to the returned channel. The pid is
// registered under the reaper's lock before it can be reaped.
func (s *supervisor) startWatched(argv []string, attr *os.ProcAttr) (int, <-chan int, error) {
	exit := make(chan int, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := os.StartProcess("/proc/self/exe", argv, attr)
	if err != nil {
		return 0, nil, err
	}
	if s.watched == nil {
		s.watched = map[int]chan<- int{}
	}
	s.watched[p.Pid] = exit
	_ = p.Release()
	return p.Pid, exit, nil
}
