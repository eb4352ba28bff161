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

// desiredFile is the desired.json the daemon watches: the configured
// file, or the local mirror of an s3:// one.
func desiredFile(cfg *hostconfig.Config) string {
	if hostconfig.IsS3(cfg.Paths.DesiredStateFile) {
		return filepath.Join(cfg.Paths.StateDir, fleet.MirrorName)
	}
	return cfg.Paths.DesiredStateFile
}

// startFleet runs the poller that mirrors an s3:// desired_state_file and
// the uploader that puts reported.json to reported_state_url, when the
// configuration names them, until stop is called or ctx ends. The first
// poll is made before it returns, so a new host starts on its document.
// Its goroutines are started with spawn, which serve joins before it
// closes the daemon. problem, nil without a poller, says what keeps the
// poll from reading the document (the daemon reports it).
func startFleet(ctx context.Context, cfg *hostconfig.Config, spawn func(func())) (stop func(), problem func() string, err error) {
	ctx, stop = context.WithCancel(ctx)
	problem, err = runFleet(ctx, cfg, spawn)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return stop, problem, nil
}

func runFleet(ctx context.Context, cfg *hostconfig.Config, spawn func(func())) (problem func() string, err error) {
	logf := func(format string, args ...any) { log.Printf("nibrunnerd: "+format, args...) }
	if err := os.MkdirAll(cfg.Paths.StateDir, perm.Dir); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	if url := cfg.Paths.DesiredStateFile; hostconfig.IsS3(url) {
		obj, err := fleet.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("paths.desired_state_file: %w", err)
		}
		p := &fleet.Poller{Source: obj.Store, Key: obj.Key, URL: url, Mirror: desiredFile(cfg),
			Interval: time.Duration(cfg.Paths.DesiredStatePollMs) * time.Millisecond, Logf: logf}
		p.Poll(ctx)
		spawn(func() { p.Run(ctx) })
		problem = p.Problem
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
	return problem, nil
}
