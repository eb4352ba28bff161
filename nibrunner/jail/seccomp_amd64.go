package jail

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const auditArch = unix.AUDIT_ARCH_X86_64

// archPrologue kills a call made through the x32 ABI (its numbers carry
// bit 30), which would otherwise reach the x86-64 handlers under numbers
// the list does not name.
var archPrologue = []bpf.Instruction{
	bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1},
	bpf.RetConstant{Val: retKill},
}

// archAllowed are x86-64's legacy names for calls the generic list has
// (glibc and QEMU still make some of them).
var archAllowed = []uint32{
	unix.SYS_OPEN, unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_ACCESS, unix.SYS_READLINK, unix.SYS_GETDENTS,
	unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_CREATE, unix.SYS_PIPE, unix.SYS_DUP2,
	unix.SYS_EVENTFD, unix.SYS_SIGNALFD, unix.SYS_ARCH_PRCTL, unix.SYS_GETPGRP, unix.SYS_TIME, unix.SYS_ALARM,
	unix.SYS_UNLINK, unix.SYS_RENAME, unix.SYS_MKDIR, unix.SYS_RMDIR,
}
