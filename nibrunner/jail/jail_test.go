package jail

import (
	"reflect"
	"strings"
	"testing"
)

const passwd = `root:x:0:0:root:/root:/bin/bash
# a comment
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
odd:x:900010:100:a user in the range:/home/odd:/bin/sh
grouped:x:1000:900500::/home/g:/bin/sh
`

const group = `root:x:0:
nogroup:x:65534:
clash:x:900003:
`

func TestARangeIsRefusedWhenItHoldsZeroOrAHostAccountOrGroup(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Range
		want string // "" is accepted
	}{
		{"free", Range{UIDBase: 800000, GIDBase: 800000, Count: 100}, ""},
		{"uid zero", Range{UIDBase: 0, GIDBase: 800000, Count: 10}, "never run as uid 0"},
		{"gid zero", Range{UIDBase: 800000, GIDBase: 0, Count: 10}, "never run as gid 0"},
		{"empty", Range{UIDBase: 800000, GIDBase: 800000, Count: 0}, "holds no id"},
		{"an account's uid", Range{UIDBase: 900000, GIDBase: 800000, Count: 11}, `/etc/passwd line 4: "odd" has id 900010`},
		{"just below an account", Range{UIDBase: 900000, GIDBase: 800000, Count: 9}, ""},
		{"the tools' uid is an account's", Range{UIDBase: 900000, GIDBase: 800000, Count: 10}, `"odd" has id 900010`},
		{"the tools' gid is a group", Range{UIDBase: 800000, GIDBase: 900000, Count: 2}, `"clash" has id 900003`},
		{"an account's primary group", Range{UIDBase: 800000, GIDBase: 900500, Count: 1}, `/etc/passwd line 5: "grouped" has id 900500`},
		{"a group", Range{UIDBase: 800000, GIDBase: 900000, Count: 4}, `/etc/group line 3: "clash" has id 900003`},
		{"the shared group is a group", Range{UIDBase: 800000, GIDBase: 900000, Count: 3}, `"clash" has id 900003`},
		{"past 2^31", Range{UIDBase: 1<<31 - 5, GIDBase: 800000, Count: 10}, "passes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.r.Check([]byte(passwd), []byte(group))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func TestEachSlotHasItsOwnIdentityInsideTheRange(t *testing.T) {
	r := Range{UIDBase: 900000, GIDBase: 700000, Count: 4}
	id, err := r.For(3)
	if err != nil || id != (Identity{UID: 900003, GID: 700003}) {
		t.Fatalf("slot 3: %+v %v", id, err)
	}
	if r.SharedGID() != 700004 {
		t.Fatalf("shared gid %d", r.SharedGID())
	}
	if tool := r.ToolID(); tool != (Identity{UID: 900004, GID: 700005}) {
		t.Fatalf("the tools' identity %+v shares an id with a slot or the shared group", tool)
	}
	for _, s := range []int{-1, 4} {
		if _, err := r.For(s); err == nil {
			t.Errorf("slot %d is outside the range but got an identity", s)
		}
	}
}

func TestLimitsFollowTheGuestsSize(t *testing.T) {
	for _, c := range []struct {
		vcpus, mem, tcg int
		want            Limits
	}{
		{1, 128, 0, Limits{CPUQuotaUs: 100000, CPUPeriodUs: 100000, MemoryMax: (128 + 64 + 16) << 20, PIDsMax: 256}},
		{2, 1024, 32, Limits{CPUQuotaUs: 200000, CPUPeriodUs: 100000, MemoryMax: (1024 + 64 + 128 + 32) << 20, PIDsMax: 256}},
		{0, 0, 0, Limits{CPUQuotaUs: 100000, CPUPeriodUs: 100000, MemoryMax: (1 + 64) << 20, PIDsMax: 256}},
	} {
		if got := LimitsFor(c.vcpus, c.mem, c.tcg); got != c.want {
			t.Errorf("LimitsFor(%d, %d, %d) = %+v, want %+v", c.vcpus, c.mem, c.tcg, got, c.want)
		}
	}
	if got := LimitsFor(1, 128, 0).WhileSnapshotting(128).MemoryMax; got != (256+64+16)<<20 {
		t.Errorf("while snapshotting: %d", got)
	}
}

func TestCgroupFilesSayTheLimitsInEachVersionsWords(t *testing.T) {
	l := Limits{CPUQuotaUs: 200000, CPUPeriodUs: 100000, MemoryMax: 1 << 28, PIDsMax: 256}
	for _, c := range []struct {
		name           string
		v              Version
		memsw, raising bool
		want           []Write
	}{
		{"v2", V2, false, false, []Write{
			{"", "cpu.max", "200000 100000"}, {"", "memory.max", "268435456"}, {"", "memory.swap.max", "0"},
			{"", "memory.oom.group", "1"}, {"", "pids.max", "256"},
		}},
		{"v1 without swap accounting", V1, false, false, []Write{
			{"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "200000"}, {"memory", "memory.swappiness", "0"},
			{"memory", "memory.limit_in_bytes", "268435456"}, {"pids", "pids.max", "256"},
		}},
		{"v1 lowering with swap accounting sets memsw last", V1, true, false, []Write{
			{"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "200000"}, {"memory", "memory.swappiness", "0"},
			{"memory", "memory.limit_in_bytes", "268435456"}, {"memory", "memory.memsw.limit_in_bytes", "268435456"}, {"pids", "pids.max", "256"},
		}},
		{"v1 raising with swap accounting sets memsw first", V1, true, true, []Write{
			{"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "200000"}, {"memory", "memory.swappiness", "0"},
			{"memory", "memory.memsw.limit_in_bytes", "268435456"}, {"memory", "memory.limit_in_bytes", "268435456"}, {"pids", "pids.max", "256"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := GuestWrites(c.v, l, c.memsw, c.raising); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v\nwant %v", got, c.want)
			}
		})
	}
	if got := MemoryWrites(V1, l, true, true); !reflect.DeepEqual(got, []Write{{"memory", "memory.memsw.limit_in_bytes", "268435456"}, {"memory", "memory.limit_in_bytes", "268435456"}}) {
		t.Errorf("v1 memory raise: %v", got)
	}
	if got := MemoryWrites(V2, l, false, true); !reflect.DeepEqual(got, []Write{{"", "memory.max", "268435456"}}) {
		t.Errorf("v2 memory raise: %v", got)
	}
	if got := ParentWrites(V1, 50); !reflect.DeepEqual(got, []Write{{"cpu", "cpu.shares", "512"}}) {
		t.Errorf("v1 parent: %v", got)
	}
	if got := ParentWrites(V2, 50); !reflect.DeepEqual(got, []Write{{"", "cpu.weight", "50"}, {"", "cgroup.subtree_control", "+cpu +memory +pids"}}) {
		t.Errorf("v2 parent: %v", got)
	}
}

func TestWeightsMapToSharesWithinV1sBounds(t *testing.T) {
	for w, want := range map[int]int64{100: 1024, 1: 10, 10000: 102400, 0: 2} {
		if got := SharesOfWeight(w); got != want {
			t.Errorf("weight %d: %d shares, want %d", w, got, want)
		}
	}
}

func TestOOMKillsAreReadFromEitherVersionsEvents(t *testing.T) {
	for in, want := range map[string]int{
		"low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n": 1, // v2 memory.events
		"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n":                3, // v1 memory.oom_control
		"oom_kill_disable 0\nunder_oom 0\n":                            0,
		"":                                                             0,
	} {
		if got := OOMKills(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

func TestARootBindsTheGuestsFilesOnceFoldersFirst(t *testing.T) {
	got, err := RootBinds(Files{
		Program:   "/usr/bin/qemu-system-x86_64",
		ReadOnly:  []string{"/img/vmlinuz", "/img/initrd", "/cache/l0.sqfs", "/run/nb/a/config.img", "/img/vmlinuz"},
		ReadWrite: []string{"/vol/a.ext4", "/run/nb/a/vm"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Bind{
		{Path: "/img/vmlinuz", ReadOnly: true}, {Path: "/img/initrd", ReadOnly: true}, {Path: "/cache/l0.sqfs", ReadOnly: true},
		{Path: "/vol/a.ext4"},
		{Path: "/dev/null", Dev: true}, {Path: "/dev/zero", Dev: true}, {Path: "/dev/urandom", Dev: true}, {Path: "/dev/random", Dev: true},
		{Path: "/run/nb/a/config.img", ReadOnly: true}, {Path: "/run/nb/a/vm"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	kvm, _ := RootBinds(Files{Program: "/opt/qemu", KVM: true})
	if kvm[0].Path != "/opt/qemu" || kvm[len(kvm)-1].Path != "/dev/kvm" {
		t.Fatalf("a QEMU outside /usr is bound, and /dev/kvm with KVM: %v", kvm)
	}
	for _, bad := range []Files{{}, {Program: "qemu"}, {Program: "/q", ReadOnly: []string{"/a/../b"}}, {Program: "/q", ReadWrite: []string{"/"}}} {
		if _, err := RootBinds(bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

func TestADelegatedDaemonPutsItsGuestsBesideItself(t *testing.T) {
	for self, want := range map[string][2]string{
		"/":                                {"", ""},
		"":                                 {"", ""},
		"/system.slice/nibrunnerd.service": {"system.slice/nibrunnerd.service/guests", "system.slice/nibrunnerd.service/daemon"},
		"/system.slice/nibrunnerd.service/daemon": {"system.slice/nibrunnerd.service/guests", "system.slice/nibrunnerd.service/daemon"},
		"/mydaemon": {"mydaemon/guests", "mydaemon/daemon"},
		"/daemon":   {"", ""},
	} {
		g, d := SplitDelegated(self)
		if [2]string{g, d} != want {
			t.Errorf("%q: %q %q, want %q", self, g, d, want)
		}
	}
}
