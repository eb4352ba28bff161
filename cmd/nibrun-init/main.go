// Command nibrun-init is PID 1 inside every nibrunner microVM. It is a static
// binary (CGO_ENABLED=0) placed in the guest's initramfs as /init.
//
// It mounts the kernel's filesystems, loads the drivers the initramfs
// carries, finds its drives by their virtio serials (nibrunner/guest),
// stacks the layers and the volume with overlayfs, configures eth0 from the
// kernel command line, and then supervises the tenant program: run it
// chrooted as 65534:65534, restart it by the restart policy, and forward its
// output and exit codes to the host over the virtio-serial control port,
// where it also answers freeze/thaw, measure and shutdown requests. As PID 1
// it also reaps every orphan. When it cannot go on it tells the host why and
// resets the machine, which ends QEMU (-no-reboot).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/internal/version"
	"alpnib.dev/nibrunner/guest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("nibrun-init", version.String())
		return
	}
	if len(os.Args) > 1 && os.Args[1] == enterTenantArg {
		enterTenant(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == enterExecArg {
		enterExec(os.Args[2:])
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "nibrun-init: this is the init of a nibrunner guest and runs only as PID 1 inside a microVM; run `nibrun-init version` to see its version")
		os.Exit(2)
	}
	run()
}

// logf writes to the serial console, which the host keeps per app.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stdout, "nibrun-init: "+format+"\n", args...)
}

func run() {
	start := time.Now()
	if err := mountKernelFilesystems(); err != nil {
		fail(nil, "mount kernel filesystems", err)
	}
	params := kernelParams()
	if params[guest.ParamProbe] != "" {
		fmt.Println(guest.ProbeOK)
		powerOff()
	}
	if t, err := strconv.ParseInt(params[guest.ParamTime], 10, 64); err == nil {
		tv := unix.Timeval{Sec: t}
		_ = unix.Settimeofday(&tv)
	}
	if err := loadModules(); err != nil {
		fail(nil, "load kernel modules", err)
	}
	if err := setReportingOrder(params[guest.ParamReportingOrder], guest.ReportingOrderFile); err != nil {
		logf("%v (free memory goes back to the host in larger blocks only)", err)
	}
	ctl, err := openControl(10 * time.Second)
	if err != nil {
		fail(nil, "open the control port", err)
	}
	cfg, err := readConfig(10 * time.Second)
	if err != nil {
		fail(ctl, "read the config drive", err)
	}
	logf("app %s deployment %s", cfg.AppID, cfg.DeploymentID)
	if cfg.AppID != "" {
		_ = unix.Sethostname([]byte(cfg.AppID))
	}
	root, err := stackRoot(cfg)
	if err != nil {
		fail(ctl, "stack the root filesystem", err)
	}
	if err := configureNetwork(root); err != nil {
		fail(ctl, "configure the network", err)
	}
	if err := makeWorkingDirectory(root, cfg.WorkingDirectory); err != nil {
		fail(ctl, "make the working directory", err)
	}
	sup := newSupervisor(cfg, root, ctl)
	ctl.execs = newExecServer(root, cfg.WorkingDirectory, cfg.Environ(), sup, ctl.sendExec)
	ctl.handle(sup)
	logf("ready after %v", time.Since(start).Round(time.Millisecond))
	ctl.send(guest.Message{Kind: guest.KindReady})
	sup.run()
}

// fail reports a setup failure to the host (when the control port is open)
// and on the console, then resets the machine.
func fail(ctl *control, doing string, err error) {
	logf("cannot %s: %v", doing, err)
	if ctl != nil {
		ctl.send(guest.Message{Kind: guest.KindFailed, Error: fmt.Sprintf("the guest could not %s: %v", doing, err)})
		ctl.flush(3 * time.Second)
	}
	powerOff()
}

// powerOff syncs and resets the machine. QEMU runs with -no-reboot, so a
// reset ends its process: that is how a guest stops.
func powerOff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	// Reboot does not return when it works; keep PID 1 alive if it did not.
	for {
		time.Sleep(time.Hour)
	}
}
