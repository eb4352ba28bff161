package jail

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const auditArch = unix.AUDIT_ARCH_AARCH64

var archPrologue []bpf.Instruction

// archAllowed is empty: arm64 has only the generic calls.
var archAllowed []uint32
