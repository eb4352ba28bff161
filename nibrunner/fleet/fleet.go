// Package fleet lets many hosts share one S3 bucket instead of a control
// plane: each host polls its own desired.json object there and puts its
// reported.json beside it. A Poller is the daemon's document source for an
// s3:// desired.json: it hands the daemon each new reading of the object,
// and, when the object cannot be read, only why, so the host keeps the
// document it has and its report says why; an Uploader watches the
// daemon's reported.json and puts it to its object when it says something
// new, and at least once a heartbeat so a reader sees the host is alive.
//
// Polls are conditional GETs (If-None-Match with the last ETag): an
// unchanged object costs one request and no body. An object that does not
// exist is a missing document, as a deleted local file is, and the daemon
// reports that it has no document to take.
package fleet

import (
	"context"
	"fmt"
	"strings"

	"alpnib.dev/nibrunner/store"
)

// CopyName is the copy of the last S3 desired.json read, in the state
// folder, for the control socket's status (Poller.Copy). The daemon never
// reads it: it takes each reading from the poller and records what it
// accepts in its database.
const CopyName = "desired-s3-copy.json"

// Object is one S3 object: the store of its folder and its key there.
type Object struct {
	URL   string
	Store *store.S3
	Key   string
}

// Open opens s3://bucket/folder/key, with the endpoint and credentials of
// the environment (store.NewS3).
func Open(ctx context.Context, url string) (*Object, error) {
	rest, ok := strings.CutPrefix(url, "s3://")
	bucket, path, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" || path == "" || strings.HasSuffix(path, "/") {
		return nil, fmt.Errorf("%q names no object; want s3://bucket/key", url)
	}
	folder, key := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		folder, key = path[:i], path[i+1:]
	}
	s, err := store.NewS3(ctx, "s3://"+bucket+"/"+folder)
	if err != nil {
		return nil, err
	}
	return &Object{URL: url, Store: s, Key: key}, nil
}
