package volume_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/volume"
)

// TestMain lets this test binary be the jail's launcher, as nibrunnerd's
// main is: a jailed grow runs e2fsck and resize2fs through it.
func TestMain(m *testing.M) {
	if jail.IsLauncher(os.Args) {
		os.Exit(jail.RunLauncher(os.Args))
	}
	if filepath.Base(os.Args[0]) == probeName {
		os.Exit(probe())
	}
	os.Exit(m.Run())
}

// probeName is this test binary run as e2fsck (through a link of that
// name): it says who it runs as and what it may do, then fails, so that
// the grow's error shows what it said.
const probeName = "e2fsck-probe"

func probe() int {
	fmt.Printf("uid %d gid %d groups %v\n", os.Getuid(), os.Getgid(), must(os.Getgroups()))
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err == nil {
		fmt.Printf("effective %#x permitted %#x\n", uint64(data[0].Effective)|uint64(data[1].Effective)<<32, uint64(data[0].Permitted)|uint64(data[1].Permitted)<<32)
	}
	bounding := 0
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if n, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && n == 1 {
			bounding++
		}
	}
	nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	fmt.Printf("bounding %d no_new_privs %d\n", bounding, nnp)
	_, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	fmt.Printf("netlink: %v\n", err)
	return 8
}

func must[T any](v T, _ error) T { return v }

// toolID is the tools' identity in these tests: no account's, no test
// guest's.
var toolID = jail.Identity{UID: 899990, GID: 899990}

func jailed(t *testing.T, l *volume.Local) {
	l.Jail = &jail.Tool{Root: filepath.Join(t.TempDir(), "root"), ID: toolID}
}

func TestAGrowParsesTheTenantsExt4AsTheToolsUidWithNoCapabilityUnderTheFilter(t *testing.T) {
	f := newFixture(t)
	spec := volume.Spec{VolumeID: "probe", SizeBytes: 16 << 20, State: volume.Present}
	if _, err := f.local.Converge(ctx(t), spec); err != nil {
		t.Fatal(err)
	}
	jailed(t, f.local)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), probeName)
	if err := os.Symlink(exe, probe); err != nil {
		t.Fatal(err)
	}
	f.local.E2fsck = probe
	spec.SizeBytes = 32 << 20
	_, err = f.local.Converge(ctx(t), spec)
	if err == nil {
		t.Fatal("the grow went through a failing e2fsck")
	}
	for _, want := range []string{
		"uid 899990 gid 899990 groups []",
		"effective 0x0 permitted 0x0", "bounding 0 no_new_privs 1",
		// A netlink socket opens in any empty network namespace: only
		// the launcher's filter refuses it.
		"netlink: address family not supported by protocol",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the jailed e2fsck did not say %q:\n%v", want, err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(f.local.Path("probe"), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("after the tool, the volume is uid %d gid %d (%v), want root's again", st.Uid, st.Gid, err)
	}
}

func TestAJailedGrowChecksAndResizesTheVolumeKeepingItsData(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	spec := volume.Spec{VolumeID: "grow", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c}
	if _, err := f.local.Converge(ctx(t), spec); err != nil {
		t.Fatal(err)
	}
	jailed(t, f.local)
	spec.SizeBytes = 48 << 20
	v, err := f.local.Converge(ctx(t), spec)
	if err != nil || !v.Grown || v.SizeBytes != 48<<20 {
		t.Fatalf("grow = %+v, %v", v, err)
	}
	u, err := f.local.Usage(ctx(t), "grow")
	if err != nil || u.TotalBytes <= 16<<20 {
		t.Fatalf("the filesystem holds %d bytes after the grow (%v)", u.TotalBytes, err)
	}
	if got := debugfs(t, v.Path, "cat /root/srv/site/index.html"); got != "<h1>hello</h1>" {
		t.Fatalf("after growing, index.html holds %q", got)
	}
}
