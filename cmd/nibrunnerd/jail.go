package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/vmm/qemu"
)

// checkJailRange refuses the configuration's jail ids when any is an
// account's or group's of the host's /etc/passwd or /etc/group (under
// root, for install's tests).
func checkJailRange(root string, cfg *hostconfig.Config) error {
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil {
		return fmt.Errorf("reading /etc/passwd to check [jail] uid_base: %w", err)
	}
	group, err := os.ReadFile(filepath.Join(root, "etc/group"))
	if err != nil {
		return fmt.Errorf("reading /etc/group to check [jail] gid_base: %w", err)
	}
	if err := cfg.JailRange().Check(passwd, group); err != nil {
		return fmt.Errorf("the [jail] ids of %s: %w", hostconfig.Path(), err)
	}
	return nil
}

// jailRangeStep is install's check of the jail's ids.
func jailRangeStep(_ context.Context, in *hostconfig.Install) error {
	if _, err := os.Stat(filepath.Join(in.Root, "etc/passwd")); !in.OnThisHost() && err != nil {
		in.Left = append(in.Left, "on the host itself: keep the [jail] ids out of /etc/passwd and /etc/group (serve refuses to start otherwise)")
		return nil
	}
	if err := checkJailRange(in.Root, in.Config); err != nil {
		return err
	}
	r := in.Config.JailRange()
	in.Kept = append(in.Kept, fmt.Sprintf("the jail's uids %d…%d and gids %d…%d are no account's or group's", r.UIDBase, r.ToolID().UID, r.GIDBase, r.ToolID().GID))
	return nil
}

// jailConfig is the VMM's jail for cfg. Under cgroup v2 in a cgroup of
// its own (systemd's, with Delegate=yes), the daemon moves itself to a
// leaf "daemon" of it and its guests go under "guests" beside it: v2
// lets only a cgroup without processes of its own share controllers with
// children.
func jailConfig(cfg *hostconfig.Config) (qemu.Jail, error) {
	j := qemu.Jail{
		UIDBase: cfg.Jail.UIDBase, GIDBase: cfg.Jail.GIDBase, Count: cfg.JailRange().Count,
		// Under v1, or v2 with nothing delegated, the VMM names the parent
		// for the runtime folder (nibrunner-<hash>), at the hierarchy's root.
		CgroupMount: jail.DefaultMount, CPUWeight: cfg.Jail.GuestsCPUWeight,
	}
	if err := checkJailRange("/", cfg); err != nil {
		return j, err
	}
	parent, leaf, err := jail.DelegatedParent(jail.DefaultMount)
	if err != nil {
		return j, err
	}
	if parent != "" {
		if err := jail.MoveSelf(jail.DefaultMount, leaf); err != nil {
			return j, err
		}
		j.CgroupParent = parent
	}
	return j, nil
}
