package qemu

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

// adopt takes over the guests named by pidfiles: a live one of this boot
// (same PID, same start time, a QEMU naming this app's QMP socket) is
// reconnected (QMP in the background if it is busy); one that died while nobody watched is listed as exited; a
// pidfile from an earlier boot is removed.
func (v *VMM) adopt(ctx context.Context) error {
	pfs, err := vmm.ReadPidfiles(v.cfg.RuntimeDir)
	if err != nil {
		return fmt.Errorf("read pidfiles: %w", err)
	}
	for _, pf := range pfs {
		if pf.BootID != v.bootID {
			_ = os.Remove(v.pidfile(pf.AppID))
			continue
		}
		g := &vmGuest{pf: pf, done: make(chan struct{}), log: tenantLog{path: filepath.Join(v.appDir(pf.AppID), tenantLogFile)}}
		g.rec = v.readRecord(pf.AppID)
		if pf.Alive(v.bootID) && v.isOurQEMU(pf) {
			// A VMM of this process that still holds the guest is
			// superseded, as a restarted daemon's predecessor would be by
			// dying: its connections close, so this one can attach.
			supersede(v.pidfile(pf.AppID), g)
			// A live guest is adopted even if QMP does not answer yet: a
			// guest listed as exited would be booted a second time.
			g.ctl = newControl(filepath.Join(v.vmDir(pf.AppID), controlSocket), v.onMessage(g))
			go g.ctl.run()
			go v.watch(g)
			go keepConsole(v.ConsolePath(pf.AppID), g.done)
			if !v.attachQMP(ctx, g, 3*time.Second) {
				go v.keepAttaching(g)
			}
			v.guests[pf.AppID] = g
			continue
		}
		// It died while nobody watched: its jail is taken down now.
		if msg := v.unjail(pf.AppID, g.rec, pf.PID); msg != "" {
			g.message = msg
		}
		close(g.done)
		v.guests[pf.AppID] = g
	}
	v.killOrphans()
	// A cgroup no live guest is in (its app deleted while the daemon was
	// down, a launch that died before its start) goes.
	for _, name := range v.cgroups.Names() {
		if g := v.guests[name]; g == nil || !g.alive() {
			v.unjail(name, v.readRecord(name), 0)
		}
	}
	return nil
}

// attachQMP connects g's QMP within timeout, then resumes a guest an
// unfinished sleep left paused. QEMU serves one QMP client at a time, so
// this fails while an earlier daemon (or VMM) in the same process still
// holds the connection.
func (v *VMM) attachQMP(ctx context.Context, g *vmGuest, timeout time.Duration) bool {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q, err := dialQMP(qctx, filepath.Join(v.vmDir(g.pf.AppID), qmpSocket))
	if err != nil {
		return false
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		q.close()
		return true
	}
	g.qmp = q
	g.mu.Unlock()
	v.resumeIfPaused(ctx, g)
	return true
}

// keepAttaching retries attachQMP until it works or the guest is gone.
func (v *VMM) keepAttaching(g *vmGuest) {
	for g.alive() {
		if v.attachQMP(context.Background(), g, 10*time.Second) {
			return
		}
		select {
		case <-g.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// resumeIfPaused continues a guest that a daemon paused to sleep it and
// then died before the guest's process ended: its half-written snapshot has
// no stamp (and is removed), so the guest must run on, its volume thawed
// (the sleep froze it before the pause; nothing else pauses a guest).
func (v *VMM) resumeIfPaused(ctx context.Context, g *vmGuest) {
	q, err := g.monitor()
	if err != nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := q.status(qctx)
	if err != nil {
		return
	}
	switch st {
	case "paused", "postmigrate", "finish-migrate":
		_, _ = q.execute(qctx, "migrate_cancel", nil)
		if _, err := q.execute(qctx, "cont", nil); err != nil {
			return
		}
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = g.thaw(tctx)
	}
}

// isOurQEMU checks the process's command line names this app's QMP socket.
func (v *VMM) isOurQEMU(pf vmm.Pidfile) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pf.PID))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), qmpArgOf(v.vmDir(pf.AppID)))
}

// watch closes an adopted guest's done channel when its process ends (it
// is not our child, so there is no Wait to tell us).
func (v *VMM) watch(g *vmGuest) {
	for g.pf.Alive(v.bootID) {
		g.mu.Lock()
		closed := g.closed
		g.mu.Unlock()
		if closed { // let go of (VMM.Close); someone else watches it now
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	v.ended(g)
}

// holders maps a guest's pidfile to the vmGuest holding its connections in
// this process. QEMU serves one QMP and one control client at a time, so a
// second VMM on the same runtime folder (a daemon re-opened in-process, as
// tests do) takes the guest over from the first.
var holders sync.Map

// supersede makes g the holder of the guest at pidfile, closing the
// connections of the previous holder, if any.
func supersede(pidfile string, g *vmGuest) {
	g.mu.Lock()
	g.holderKey = pidfile
	g.mu.Unlock()
	if old, ok := holders.Swap(pidfile, g); ok && old.(*vmGuest) != g {
		old.(*vmGuest).close()
	}
}

// qmpArgOf is the part of a QEMU command line (or its launcher's) that
// names the QMP socket in dir: no other process's does.
func qmpArgOf(dir string) string { return "unix:" + filepath.Join(dir, qmpSocket) + "," }

// killOrphans finds the QEMUs of launches that a killed daemon left
// before their pidfile (the launching marker says which apps), kills
// them and takes their jails down, so that no guest runs that no pidfile
// names: the next start would boot a second one on the same volume.
func (v *VMM) killOrphans() {
	markers, _ := filepath.Glob(filepath.Join(v.cfg.RuntimeDir, "*", launchingFile))
	for _, mk := range markers {
		app := filepath.Base(filepath.Dir(mk))
		if g := v.guests[app]; g != nil && g.alive() {
			_ = os.Remove(mk)
			continue
		}
		want := qmpArgOf(v.vmDir(app))
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(b), want) {
				continue
			}
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if err != nil {
				continue
			}
			log.Printf("nibrunnerd: %s: killing QEMU pid %d, which a launch left without a pidfile", app, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
		v.unjail(app, v.readRecord(app), 0)
		_ = os.Remove(mk)
	}
}
