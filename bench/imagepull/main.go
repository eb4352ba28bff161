// Command imagepull pulls one image by digest with nibrunner/image into a
// fresh cache and prints the squashfs's path and the time taken: the
// "ours" side of bench/image-pull.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"alpnib.dev/nibrunner/image"
)

func main() {
	ref := flag.String("ref", "", "registry/repository@sha256:… to pull")
	cache := flag.String("cache", "", "the cache folder (use a fresh one per run)")
	plain := flag.String("plain-http", "", "a loopback registry host:port reached without TLS")
	flag.Parse()
	o := image.Options{CacheDir: *cache}
	if *plain != "" {
		o.PlainHTTP = []string{*plain}
	}
	p, err := image.New(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagepull:", err)
		os.Exit(1)
	}
	start := time.Now()
	img, err := p.Pull(context.Background(), *ref, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagepull:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %d bytes in %.2fs\n", img.Path, img.Size, time.Since(start).Seconds())
}
