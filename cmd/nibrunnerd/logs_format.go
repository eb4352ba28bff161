package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"alpnib.dev/nibrunner/control"
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
