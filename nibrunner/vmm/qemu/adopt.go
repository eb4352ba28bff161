package qemu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

// adopt takes over the guests named by pidfiles: a live one of this boot
// (same PID, same start time, a QEMU naming this app's QMP socket) is
// reconnected; one that died while nobody watched is listed as exited; a
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
		if b, err := os.ReadFile(filepath.Join(v.appDir(pf.AppID), recordFile)); err == nil {
			_ = json.Unmarshal(b, &g.rec)
		}
		if pf.Alive(v.bootID) && v.isOurQEMU(pf) {
			if err := v.connect(ctx, g); err == nil {
				v.resumeIfPaused(ctx, g)
				go v.watch(g)
				v.guests[pf.AppID] = g
				continue
			}
		}
		close(g.done)
		v.guests[pf.AppID] = g
	}
	return nil
}

// resumeIfPaused continues a guest that a daemon paused to sleep it and
// then died before the guest's process ended: its half-written snapshot has
// no stamp (and is removed), so the guest must run on.
func (v *VMM) resumeIfPaused(ctx context.Context, g *vmGuest) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := g.qmp.status(qctx)
	if err != nil {
		return
	}
	switch st {
	case "paused", "postmigrate", "finish-migrate":
		_, _ = g.qmp.execute(qctx, "migrate_cancel", nil)
		_, _ = g.qmp.execute(qctx, "cont", nil)
	}
}

// isOurQEMU checks the process's command line names this app's QMP socket.
func (v *VMM) isOurQEMU(pf vmm.Pidfile) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pf.PID))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "unix:"+filepath.Join(v.appDir(pf.AppID), qmpSocket)+",")
}

// watch closes an adopted guest's done channel when its process ends (it
// is not our child, so there is no Wait to tell us).
func (v *VMM) watch(g *vmGuest) {
	for g.pf.Alive(v.bootID) {
		select {
		case <-g.qmp.done:
			// QMP hung up: the process is ending; check again shortly.
			time.Sleep(50 * time.Millisecond)
		case <-time.After(500 * time.Millisecond):
		}
	}
	close(g.done)
}
