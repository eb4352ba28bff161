package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/reported"
)

// logHandler is the slog handler of serve's --log-format writing to w:
// plain is nil (the standard log's lines, as before), text slog's
// key=value records, json one JSON object a line (as the proxy's access
// log already is).
func logHandler(format string, w io.Writer) (slog.Handler, error) {
	switch format {
	case "plain":
		return nil, nil
	case "text":
		return slog.NewTextHandler(w, nil), nil
	case "json":
		return slog.NewJSONHandler(w, nil), nil
	}
	return nil, fmt.Errorf("--log-format %q: choose plain, text or json", format)
}

// logLifecycle writes one record to l for each change of an app's state
// j records after from, with its reason (the daemon's message), until ctx
// ends: started, slept, woke, failed, restarted, removed.
func logLifecycle(ctx context.Context, j *control.Journal, from uint64, l *slog.Logger) {
	last := from
	for {
		evs, more := j.After(last)
		for _, e := range evs {
			last = e.Seq
			if e.Subject != control.SubjectInstance {
				continue
			}
			attrs := []any{"app", e.ID}
			if e.From != "" {
				attrs = append(attrs, "from", e.From)
			}
			if e.To != "" {
				attrs = append(attrs, "to", e.To)
			}
			if e.Message != "" {
				attrs = append(attrs, "reason", e.Message)
			}
			level := slog.LevelInfo
			if e.Verb == control.VerbFailed {
				level = slog.LevelWarn
			}
			l.Log(ctx, level, "app "+string(e.Verb), attrs...)
		}
		select {
		case <-ctx.Done():
			return
		case <-more:
		}
	}
}

// volumesAtWork are the volumes of r being made, grown or deleted, whose
// report says how the work is getting on ("being made (for 40s):
// fetching the archive, 120 MiB of 1.0 GiB (11%)").
func volumesAtWork(r *reported.HostReportedState) []reported.Volume {
	if r == nil {
		return nil
	}
	var at []reported.Volume
	for _, v := range r.Volumes {
		if v.State != reported.VolumeDeleted && strings.HasPrefix(v.Message, "being ") {
			at = append(at, v)
		}
	}
	return at
}

// logVolumeWork writes one record every `every` (by clk) for each volume
// at work in the host's latest report (read), saying how it is getting
// on, until ctx ends: a seed of a large archive takes minutes, and the
// log said nothing until it was ready (issue 39). The report, not the
// daemon, is read, so the line says what reported.json says.
func logVolumeWork(ctx context.Context, clk clock.Clock, every time.Duration, read func() *reported.HostReportedState, l *slog.Logger) {
	t := clk.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		for _, v := range volumesAtWork(read()) {
			l.Log(ctx, slog.LevelInfo, "volume at work", "volume", v.VolumeId, "app", v.AppId, "progress", v.Message)
		}
		t.Reset(every)
	}
}
