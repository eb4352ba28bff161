package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/fleet"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/perm"
)

// desiredFile is a file holding the document: the configured
// desired_state_file, or the copy of the last s3:// object read (which
// only the control socket's status reads).
func desiredFile(cfg *hostconfig.Config) string {
	if hostconfig.IsS3(cfg.Paths.DesiredStateFile) {
		return filepath.Join(cfg.Paths.StateDir, fleet.CopyName)
	}
	return cfg.Paths.DesiredStateFile
}

// startFleet opens the poller of an s3:// desired_state_file, the
// daemon's document source (nil for a local file, which the daemon
// watches), and runs the uploader that puts reported.json to
// reported_state_url when the configuration names one, until stop is
// called or ctx ends. Its goroutines are started with spawn, which serve
// joins before it closes the daemon.
func startFleet(ctx context.Context, cfg *hostconfig.Config, spawn func(func())) (stop func(), source daemon.Source, err error) {
	ctx, stop = context.WithCancel(ctx)
	source, err = runFleet(ctx, cfg, spawn)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return stop, source, nil
}

func runFleet(ctx context.Context, cfg *hostconfig.Config, spawn func(func())) (daemon.Source, error) {
	logf := func(format string, args ...any) { log.Printf("nibrunnerd: "+format, args...) }
	if err := os.MkdirAll(cfg.Paths.StateDir, perm.Dir); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	var source daemon.Source
	if url := cfg.Paths.DesiredStateFile; hostconfig.IsS3(url) {
		obj, err := fleet.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("paths.desired_state_file: %w", err)
		}
		source = &fleet.Poller{Source: obj.Store, Key: obj.Key, URL: url, Copy: desiredFile(cfg),
			Interval: time.Duration(cfg.Paths.DesiredStatePollMs) * time.Millisecond, Logf: logf}
	}
	if url := cfg.Paths.ReportedStateURL; url != "" {
		obj, err := fleet.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("paths.reported_state_url: %w", err)
		}
		u := &fleet.Uploader{Dest: obj.Store, Key: obj.Key, URL: url, Report: filepath.Join(cfg.Paths.StateDir, daemon.ReportName), Logf: logf}
		spawn(func() {
			if err := u.Run(ctx); err != nil {
				logf("fleet: %v", err)
			}
		})
	}
	return source, nil
}
