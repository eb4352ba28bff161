package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
)

// enterTenantArg is the first argument with which the init runs its own
// binary as the tenant's first step: Go's os.StartProcess can chroot and
// set ids in the child, but not set no_new_privs or empty the bounding set,
// so the child does it all itself and then executes the tenant's program
// in place (same pid, same session).
const enterTenantArg = "enter-tenant"

// enterTenant is the child's whole life: args are the stacked root, the
// working directory, then the program and its arguments. It only returns
// by failing, which it reports on stderr (the tenant's, piped to the host)
// before exiting 127, as a shell does for a program it cannot run.
func enterTenant(args []string) {
	if len(args) < 3 {
		fmt.Fprintf(os.Stderr, "nibrun-init: %s wants a root, a working directory and a program\n", enterTenantArg)
		os.Exit(2)
	}
	root, wd, argv := args[0], args[1], args[2:]
	// The bounding set and no_new_privs belong to one thread, and execve
	// passes on that thread's: do both on the thread that executes.
	runtime.LockOSThread()
	if err := dropPrivileges(root, wd, guest.TenantUID, guest.TenantGID); err != nil {
		fmt.Fprintf(os.Stderr, "nibrun-init: cannot start %s: %v\n", argv[0], err)
		os.Exit(127)
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "nibrun-init: cannot start %s: %v\n", argv[0], err)
	os.Exit(127)
}

// dropPrivileges chroots into root, goes to wd, and leaves the calling
// thread as uid and gid (the tenant's are 65534) with no supplementary groups, an
// empty capability bounding set (nothing the program executes can ever
// gain a capability, even from a file capability or a root-owned
// set-user-ID program) and no_new_privs (execve grants no set-user-ID,
// set-group-ID or file capability at all).
func dropPrivileges(root, wd string, uid, gid int) error {
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot into %s: %w", root, err)
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("working directory %s: %w", wd, err)
	}
	if err := emptyBoundingSet(); err != nil {
		return err
	}
	// syscall's set*id calls change every thread of the process.
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("drop the supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("become gid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("become uid %d: %w", uid, err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// emptyBoundingSet drops every capability the running kernel knows from
// the calling thread's bounding set: PR_CAPBSET_READ answers EINVAL past
// the last one (prctl(2)).
func emptyBoundingSet() error {
	for c := 0; ; c++ {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			if c == 0 {
				return errors.New("the kernel knows no capability to drop")
			}
			return nil
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
}
