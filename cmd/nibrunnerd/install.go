package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/network"
)

// installSteps are what install does, in order: hostconfig's own
// (configuration, folders, unit), then the other packages' steps (host
// network, guest image) and last the reminder to start the unit. With
// guestImage false the image is left to do instead of built.
func installSteps(guestImage bool) []hostconfig.Step {
	steps := hostconfig.Steps()
	steps = append(steps, hostconfig.Step{Name: "jail ids", Run: jailRangeStep}, hostconfig.Step{Name: "host network", Run: hostNetwork})
	if guestImage {
		steps = append(steps, hostconfig.Step{Name: "guest image", Run: buildGuestImage(guestimage.Build)})
	} else {
		steps = append(steps, hostconfig.Step{Name: "guest image", Run: skipGuestImage})
	}
	return append(steps, hostconfig.StartReminder)
}

// buildGuestImage is the step that builds (or finds current) the image
// every QEMU guest boots, in the configuration's guest_image_dir, with
// build. A build is cached by its inputs' hash, so a second install only
// re-hashes them and reports the image as current.
func buildGuestImage(build func(context.Context, string) (guestimage.Image, error)) func(context.Context, *hostconfig.Install) error {
	return func(ctx context.Context, in *hostconfig.Install) error {
		dir := in.Config.Paths.GuestImageDir
		before, _ := guestimage.Load(dir)
		img, err := build(ctx, dir)
		if err != nil {
			return fmt.Errorf("building the guest image in %s (needs apt-get, dpkg-deb and mksquashfs; --no-guest-image skips it): %w", dir, err)
		}
		if before.Version == img.Version {
			in.Kept = append(in.Kept, "the guest image "+img.Version+" in "+dir+" was current")
			return nil
		}
		in.Done = append(in.Done, fmt.Sprintf("built the guest image %s in %s (kernel %s)", img.Version, dir, img.KernelRelease))
		return nil
	}
}

// skipGuestImage leaves the guest image to a later install when
// --no-guest-image is given, unless one is already built.
func skipGuestImage(_ context.Context, in *hostconfig.Install) error {
	dir := in.Config.Paths.GuestImageDir
	if img, err := guestimage.Load(dir); err == nil {
		in.Kept = append(in.Kept, "the guest image "+img.Version+" in "+dir+" (not rebuilt: --no-guest-image)")
		return nil
	}
	in.Left = append(in.Left, "build the guest image, which serve --vmm qemu boots: nibrunnerd install without --no-guest-image")
	return nil
}

// sysctlConf is where the host's network settings persist across reboots.
const sysctlConf = "etc/sysctl.d/60-nibrunner.conf"

// hostNetwork persists the kernel settings guests' networking needs and,
// on the running host, applies them now.
func hostNetwork(_ context.Context, in *hostconfig.Install) error {
	path := filepath.Join(in.Root, sysctlConf)
	want := []byte(network.SysctlConf(network.HostSysctls))
	if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, want) {
		in.Kept = append(in.Kept, path+" was current")
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("making the sysctl.d folder: %w", err)
		}
		if err := atomicfile.WriteFile(path, want, 0o644); err != nil {
			return fmt.Errorf("writing the host network settings: %w", err)
		}
		in.Done = append(in.Done, "wrote the host network settings to "+path)
	}
	if !in.OnThisHost() {
		in.Left = append(in.Left, "on the host itself: sysctl --system (applies /"+sysctlConf+": IP forwarding for guests' traffic)")
		return nil
	}
	return applySysctls(in)
}

// applySysctls sets the host's network settings now when they differ.
func applySysctls(in *hostconfig.Install) error {
	wrong := network.CheckSysctls(network.HostSysctls)
	if len(wrong) == 0 {
		in.Kept = append(in.Kept, "the host's network settings were in force")
		return nil
	}
	if err := network.SetSysctls(network.HostSysctls); err != nil {
		return fmt.Errorf("setting the host's network settings: %w", err)
	}
	for _, s := range network.HostSysctls {
		in.Done = append(in.Done, fmt.Sprintf("set %s = %s (%s)", s.Key, s.Value, s.Why))
	}
	return nil
}

func newInstallCmd() *cobra.Command {
	var root, binary string
	var noGuestImage, quiet bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Prepare this host: configuration, folders, systemd unit, guest image",
		Long: `install writes the embedded default configuration when the host has none
(it never overwrites an existing one), lays out the folders the
configuration names, writes the systemd unit, builds the guest image QEMU
guests boot (a kernel built from Debian's linux-source-6.1, fetched with
apt-get download, unless make setup built it ahead, and an initramfs
holding nibrun-init) unless --no-guest-image, and prints what is
left to do. Running it again changes nothing and says so.

With --root every path is taken under that folder instead of /.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding this binary for the unit's ExecStart: %w", err)
				}
				binary = exe
			}
			abs, err := filepath.Abs(root)
			if err != nil {
				return fmt.Errorf("resolving --root: %w", err)
			}
			in := &hostconfig.Install{Root: abs, Binary: binary, ConfigPath: filepath.Join(abs, hostconfig.DefaultPath)}
			if p := os.Getenv(hostconfig.EnvVar); p != "" && !cmd.Flags().Changed("root") {
				in.ConfigPath = p
			}
			ctx, cancel := cmd.Context(), context.CancelFunc(func() {})
			if timeout > 0 {
				// The guest kernel's build alone took 8 to 15 minutes on a
				// 2-core host under TCG, past the 10 minutes install once
				// allowed: the bound is the user's, and generous.
				ctx, cancel = context.WithTimeout(ctx, timeout)
			}
			defer cancel()
			if !quiet {
				// The guest kernel's build takes minutes: say how it goes.
				ctx = guestimage.WithProgress(ctx, cmd.ErrOrStderr())
			}
			err = in.Run(ctx, installSteps(!noGuestImage))
			report(cmd.OutOrStdout(), in)
			return err
		},
	}
	cmd.Flags().StringVar(&root, "root", "/", "the folder every path is under")
	cmd.Flags().StringVar(&binary, "binary", "", "the nibrunnerd the systemd unit runs (default: this binary)")
	cmd.Flags().BoolVar(&noGuestImage, "no-guest-image", false, "do not build the guest image (the fake VMM needs none)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print no progress of long steps (the guest kernel's build) on stderr")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "give up after this long (0: no limit); the guest kernel's build takes minutes")
	return cmd
}

// report prints what install did, or that it changed nothing, and what is
// left to do.
func report(w io.Writer, in *hostconfig.Install) {
	if len(in.Done) == 0 {
		fmt.Fprintln(w, "Nothing changed: this host was already installed.")
	}
	for _, d := range in.Done {
		fmt.Fprintln(w, "  done:", d)
	}
	for _, k := range in.Kept {
		fmt.Fprintln(w, "  kept:", k)
	}
	if len(in.Left) == 0 {
		fmt.Fprintln(w, "Nothing is left to do.")
		return
	}
	fmt.Fprintln(w, "Left to do:")
	for i, l := range in.Left {
		fmt.Fprintf(w, "  %d. %s\n", i+1, l)
	}
}
