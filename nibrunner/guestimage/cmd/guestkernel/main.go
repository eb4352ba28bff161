// Command guestkernel builds the guest kernel ahead of time into
// guestimage.KernelPrebuilt ($NIBRUNNER_KERNEL_PREBUILT, default
// /var/cache/nibrunner/kernel), where every guest image build finds it
// instead of building its own. make setup runs it (scripts/prefetch.sh),
// before the tests, so that none of them builds a kernel under its own time
// limit. A second run with the same inputs builds nothing.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"alpnib.dev/nibrunner/guestimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Minutes of compiling: stderr says how far it got.
	ctx = guestimage.WithProgress(ctx, os.Stderr)
	k, err := guestimage.BuildKernel(ctx, guestimage.KernelPrebuilt())
	if err != nil {
		fmt.Fprintf(os.Stderr, "guestkernel: build the guest kernel in %s: %v\n", guestimage.KernelPrebuilt(), err)
		os.Exit(1)
	}
	fmt.Printf("guest kernel %s: %s\n", k.Release, k.Vmlinux)
}
