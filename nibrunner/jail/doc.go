// Package jail runs each guest's VMM the way Firecracker's jailer runs
// Firecracker: as a uid and gid of its own, taken from a range the host
// reserves; in mount, PID, IPC and UTS namespaces of its own (and a network
// namespace holding nothing when it is handed its tap); with a root that
// holds only that guest's files; in a cgroup of its own with CPU, memory and
// process limits; with every capability set empty and no_new_privs set.
//
// The pure parts (identity, limits, cgroup file values, the root's binds,
// the seccomp filter) are functions of their inputs and table-tested. The
// launcher is the imperative shell: the daemon re-executes its own binary
// with a hidden first argument (LauncherArg), and its main calls
// IsLauncher and RunLauncher before anything else (a test binary that
// boots guests does the same from its TestMain; importing this package
// has no side effect). The launcher builds the jail from the JSON plan it
// is given, sanitises what the program inherits (descriptors, rlimits,
// oom_score_adj, its own seccomp allowlist) and execs it. The device
// arguments of the QEMU command line are not this package's business: it
// is handed them whole. Tool runs host programs that parse tenant data
// (e2fsprogs) the same way.
package jail
