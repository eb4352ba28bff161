package jail

// Limits are what one guest's cgroup allows its VMM.
type Limits struct {
	// CPUQuotaUs over CPUPeriodUs caps the VMM at that many CPUs.
	CPUQuotaUs  int64
	CPUPeriodUs int64
	// MemoryMax bounds the VMM's memory (the guest's RAM, QEMU's own and
	// the page cache it charges) in bytes; swap is 0 besides.
	MemoryMax int64
	// PIDsMax bounds the VMM's threads.
	PIDsMax int64
}

// CPUPeriodUs is the CFS period every guest's quota is given over: the
// kernel's default, 100 ms.
const CPUPeriodUs = 100000

// FixedOverheadMiB and the guest memory over OverheadDivisor are what a
// VMM may use beside its guest's RAM (the reference daemon's figures,
// checked against QEMU's own use in docs/microvm.md). TCG adds its
// translation cache, TCGCacheMiB.
const (
	FixedOverheadMiB = 64
	OverheadDivisor  = 8
)

// PIDsMax bounds a VMM's threads: QEMU runs a main loop, an RCU thread,
// one thread per vCPU and a pool of I/O workers (at most 64), and spawns
// no process (its sandbox forbids it).
const PIDsMax = 256

// LimitsFor returns the limits of a guest of vcpus CPUs and memMiB MiB of
// RAM whose accelerator keeps tcgCacheMiB of translated code (0 under
// KVM).
func LimitsFor(vcpus, memMiB, tcgCacheMiB int) Limits {
	vcpus, memMiB = max(vcpus, 1), max(memMiB, 1)
	mib := int64(memMiB) + FixedOverheadMiB + int64(memMiB)/OverheadDivisor + int64(tcgCacheMiB)
	return Limits{
		CPUQuotaUs: int64(vcpus) * CPUPeriodUs, CPUPeriodUs: CPUPeriodUs,
		MemoryMax: mib << 20, PIDsMax: PIDsMax,
	}
}

// WhileSnapshotting is l with room for a snapshot being written: the
// state goes through the page cache, which charges the VMM's cgroup a
// second copy of the guest's RAM until it is written back.
func (l Limits) WhileSnapshotting(memMiB int) Limits {
	l.MemoryMax += int64(max(memMiB, 1)) << 20
	return l
}

// DefaultCPUWeight is [jail] guests_cpu_weight unless set: the parent of
// every guest weighs as much as one other process of the host's (v2's
// cpu.weight default), so however many guests are busy, the daemon and
// its proxy keep about half the CPU.
const DefaultCPUWeight = 100

// SharesOfWeight converts a cgroup v2 cpu.weight (1…10000, default 100)
// to cgroup v1 cpu.shares (2…262144, default 1024), as the kernel's own
// v1-to-v2 mapping does in reverse.
func SharesOfWeight(w int) int64 {
	s := int64(w) * 1024 / 100
	return min(max(s, 2), 262144)
}
