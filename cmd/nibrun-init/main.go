// Command nibrun-init is PID 1 inside every nibrunner microVM. It is a static
// binary (CGO_ENABLED=0) placed in the guest's initramfs.
package main

import (
	"fmt"
	"os"

	"alpnib.dev/internal/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("nibrun-init", version.String())
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "nibrun-init: this is the init of a nibrunner guest and runs only as PID 1 inside a microVM; run `nibrun-init version` to see its version")
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "nibrun-init: no guest contract is built into this version yet")
	os.Exit(1)
}
