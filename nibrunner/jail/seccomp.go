package jail

import (
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The launcher's own seccomp filter, installed on the thread that execs the
// VMM (or a confined tool) after no_new_privs, so that it holds for
// everything the program does; QEMU's -sandbox stacks its own on top (the
// kernel runs every filter and takes the strictest answer).
//
// It is an allowlist, as Firecracker's filters are: the system calls a
// dynamically linked QEMU (TCG or KVM, boot, sleep, wake) and e2fsprogs
// make, measured with strace (docs/decisions.md). Anything else fails
// with ENOSYS, the kernel's answer for a call it does not have, so that a
// library probing for a newer call (glibc's clone3) falls back rather than
// dies; io_uring, whose rings bypass per-call filtering, kills the process
// outright. socket is allowed for unix and IP families only: no netlink,
// packet, vsock or any other family.

// Seccomp return values.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retNoSys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNoAF  = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
)

// Offsets into struct seccomp_data (linux/seccomp.h): nr, arch, then the
// instruction pointer and six 64-bit arguments. The low half of an
// argument is its first word on a little-endian machine.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// killed are the calls that end the process: io_uring submits work the
// filter never sees. io_uring_setup itself fails with ENOSYS instead:
// QEMU 7.2 tries it at every start for its main loop
// (util/fdmon-io_uring.c) and falls back to epoll, so without a ring
// the other two can only be an attack.
var killed = []uint32{unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER}

// socketFamilies are the address families socket(2) may ask for: unix
// sockets (QMP, the control channel) and IP (user networking's slirp).
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// allowed are the calls every architecture names alike; archAllowed adds
// the legacy ones an architecture still has.
var allowed = []uint32{
	// memory
	unix.SYS_BRK, unix.SYS_MMAP, unix.SYS_MUNMAP, unix.SYS_MREMAP, unix.SYS_MPROTECT, unix.SYS_MADVISE,
	unix.SYS_MLOCK, unix.SYS_MUNLOCK, unix.SYS_MINCORE, unix.SYS_MSYNC, unix.SYS_MEMFD_CREATE, unix.SYS_MEMBARRIER,
	unix.SYS_GET_MEMPOLICY, unix.SYS_MBIND, unix.SYS_SET_MEMPOLICY,
	// files and descriptors
	unix.SYS_READ, unix.SYS_WRITE, unix.SYS_PREAD64, unix.SYS_PWRITE64, unix.SYS_READV, unix.SYS_WRITEV,
	unix.SYS_PREADV, unix.SYS_PWRITEV, unix.SYS_PREADV2, unix.SYS_PWRITEV2,
	unix.SYS_OPENAT, unix.SYS_CLOSE, unix.SYS_CLOSE_RANGE, unix.SYS_LSEEK, unix.SYS_FSTAT, unix.SYS_NEWFSTATAT, unix.SYS_STATX,
	unix.SYS_FSTATFS, unix.SYS_STATFS, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, unix.SYS_READLINKAT, unix.SYS_GETDENTS64,
	unix.SYS_GETCWD, unix.SYS_CHDIR, unix.SYS_FCHDIR,
	unix.SYS_DUP, unix.SYS_DUP3, unix.SYS_FCNTL, unix.SYS_IOCTL, unix.SYS_FLOCK,
	unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_SYNC_FILE_RANGE, unix.SYS_FALLOCATE, unix.SYS_FTRUNCATE,
	unix.SYS_FADVISE64, unix.SYS_READAHEAD, unix.SYS_COPY_FILE_RANGE, unix.SYS_SENDFILE,
	unix.SYS_UNLINKAT, unix.SYS_MKDIRAT, unix.SYS_RENAMEAT, unix.SYS_FCHMOD, unix.SYS_FCHOWN, unix.SYS_UTIMENSAT,
	unix.SYS_PIPE2, unix.SYS_EVENTFD2, unix.SYS_TIMERFD_CREATE, unix.SYS_TIMERFD_SETTIME, unix.SYS_TIMERFD_GETTIME,
	unix.SYS_SIGNALFD4, unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_INOTIFY_RM_WATCH,
	// waiting
	unix.SYS_PPOLL, unix.SYS_PSELECT6, unix.SYS_EPOLL_CREATE1, unix.SYS_EPOLL_CTL, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2,
	unix.SYS_FUTEX, unix.SYS_NANOSLEEP, unix.SYS_CLOCK_NANOSLEEP, unix.SYS_SCHED_YIELD,
	unix.SYS_IO_SETUP, unix.SYS_IO_DESTROY, unix.SYS_IO_SUBMIT, unix.SYS_IO_GETEVENTS, unix.SYS_IO_CANCEL,
	// sockets (socket itself is checked by family)
	unix.SYS_SOCKETPAIR, unix.SYS_BIND, unix.SYS_LISTEN, unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_CONNECT, unix.SYS_SHUTDOWN,
	unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME, unix.SYS_GETSOCKOPT, unix.SYS_SETSOCKOPT,
	unix.SYS_SENDTO, unix.SYS_RECVFROM, unix.SYS_SENDMSG, unix.SYS_RECVMSG, unix.SYS_SENDMMSG, unix.SYS_RECVMMSG,
	// threads and signals
	unix.SYS_SET_TID_ADDRESS, unix.SYS_SET_ROBUST_LIST, unix.SYS_GET_ROBUST_LIST,
	unix.SYS_RSEQ, unix.SYS_GETTID, unix.SYS_GETPID, unix.SYS_GETPPID, unix.SYS_TGKILL, unix.SYS_KILL,
	unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGPENDING,
	unix.SYS_RT_SIGSUSPEND, unix.SYS_SIGALTSTACK, unix.SYS_EXIT, unix.SYS_EXIT_GROUP, unix.SYS_WAIT4,
	unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_SETAFFINITY, unix.SYS_SCHED_GETPARAM, unix.SYS_SCHED_GETSCHEDULER,
	unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_GET_PRIORITY_MAX, unix.SYS_SCHED_GET_PRIORITY_MIN,
	unix.SYS_GETPRIORITY, unix.SYS_SETPRIORITY,
	// identity, time and the like
	unix.SYS_GETUID, unix.SYS_GETEUID, unix.SYS_GETGID, unix.SYS_GETEGID, unix.SYS_GETRESUID, unix.SYS_GETRESGID,
	unix.SYS_GETGROUPS, unix.SYS_GETPGID, unix.SYS_GETSID, unix.SYS_SETSID, unix.SYS_UMASK,
	unix.SYS_CLOCK_GETTIME, unix.SYS_CLOCK_GETRES, unix.SYS_GETTIMEOFDAY, unix.SYS_TIMER_CREATE, unix.SYS_TIMER_SETTIME,
	unix.SYS_TIMER_GETTIME, unix.SYS_TIMER_DELETE, unix.SYS_GETITIMER, unix.SYS_SETITIMER, unix.SYS_TIMES,
	unix.SYS_GETRANDOM, unix.SYS_UNAME, unix.SYS_SYSINFO, unix.SYS_GETRUSAGE, unix.SYS_GETRLIMIT, unix.SYS_PRLIMIT64,
	unix.SYS_GETCPU, unix.SYS_CAPGET,
	// the launcher's exec, and QEMU's own -sandbox, which only narrows
	unix.SYS_EXECVE, unix.SYS_PRCTL, unix.SYS_SECCOMP,
}

// Filter is the launcher's seccomp program for this architecture.
func Filter() ([]bpf.RawInstruction, error) {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	prog = append(prog, archPrologue...)
	for _, nr := range killed {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, bpf.RetConstant{Val: retKill})
	}
	calls := append(slices.Clone(allowed), archAllowed...)
	slices.Sort(calls)
	for _, nr := range slices.Compact(calls) {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, bpf.RetConstant{Val: retAllow})
	}
	// clone(flags, …) makes threads only: a new process (fork, or
	// posix_spawn's vfork) fails. clone3 hides its flags behind a pointer
	// and so is not in the list: glibc falls back to clone on ENOSYS.
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: 4},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipFalse: 1},
		bpf.RetConstant{Val: retAllow},
		bpf.RetConstant{Val: retNoSys},
	)
	// socket(family, …): the family is the first argument.
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipTrue: 1},
		bpf.RetConstant{Val: retNoSys},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
	)
	for _, af := range socketFamilies {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: af, SkipFalse: 1}, bpf.RetConstant{Val: retAllow})
	}
	prog = append(prog, bpf.RetConstant{Val: retNoAF})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("jail: assemble the seccomp filter: %w", err)
	}
	return raw, nil
}

// installFilter loads f on the calling thread, which must have
// no_new_privs set (or CAP_SYS_ADMIN); a program it execs keeps it.
func installFilter(f []bpf.RawInstruction) error {
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: (*unix.SockFilter)(unsafe.Pointer(&f[0]))}
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("install the seccomp filter: %w", errno)
	}
	return nil
}
