package qemu

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// noHugePages turns transparent huge pages off for this process and every
// process it starts from now on: the flag (PR_SET_THP_DISABLE) is kept
// across fork and execve, so each QEMU, however it is launched, has it.
//
// QEMU asks for huge pages on the guest's RAM (madvise MADV_HUGEPAGE), and
// with them one 4 KiB page the guest touches makes the host hold the
// 2 MiB around it: an idle 256 MiB guest using 48 MiB held 112 MiB, all of
// it huge pages. Without them the host holds what the guest touched, and
// free page reporting hands back what the guest frees page block by page
// block without splitting anything. The cost is TLB reach on KVM hosts,
// which matters to memory-bound guests, not idle ones; TCG's software TLB
// never used it.
func noHugePages() error {
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("turn transparent huge pages off for the guests (prctl PR_SET_THP_DISABLE): %w", err)
	}
	return nil
}
