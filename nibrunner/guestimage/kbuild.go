package guestimage

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"alpnib.dev/internal/progress"
)

// SourcePackage is the Debian package the guest kernel is built from: the
// source of the same 6.1 kernel Debian's own images run, as one tarball.
const SourcePackage = "linux-source-6.1"

// guestConfig is the configuration fragment applied over `make
// allnoconfig`: what the guests use, and nothing else (docs/decisions.md,
// "A guest kernel of our own").
//
//go:embed guest.config
var guestConfig []byte

// KernelPrebuiltEnv names a folder of kernels built ahead of time (make
// setup builds one there, scripts/prefetch.sh, so that the tests find it
// instead of each building it under their own time limits); unset, it is
// DefaultKernelPrebuilt.
const KernelPrebuiltEnv = "NIBRUNNER_KERNEL_PREBUILT"

// DefaultKernelPrebuilt is where make setup builds the guest kernel.
const DefaultKernelPrebuilt = "/var/cache/nibrunner/kernel"

// KernelPrebuilt is the folder of kernels built ahead of time.
func KernelPrebuilt() string { return envOr(KernelPrebuiltEnv, DefaultKernelPrebuilt) }

// Kernel is a guest kernel built from SourcePackage.
type Kernel struct {
	Vmlinux string // the ELF image QEMU boots through its PVH entry point
	Config  string // its final .config
	Release string // its release, e.g. 6.1.192
}

// kernelBuild is what decides a built kernel: the source package, the
// fragment and the compiler.
type kernelBuild struct {
	deb      string // the source package's .deb
	compiler string // gcc --version, first line
	key      string // 16 hex digits of their hash
}

// kernelBuildOf finds (or downloads) the source package into debDir and
// hashes its file name with the fragment and the compiler's version. The
// name is enough: Debian's package_version_arch.deb names one content
// (apt-get download checks it against the archive's hash), and reading
// the 139 MB at every Build took 0.65 s.
func kernelBuildOf(ctx context.Context, debDir string) (kernelBuild, error) {
	deb, err := fetchDeb(ctx, debDir, SourcePackage)
	if err != nil {
		return kernelBuild{}, err
	}
	out, err := exec.CommandContext(ctx, "gcc", "--version").Output()
	if err != nil {
		return kernelBuild{}, fmt.Errorf("the guest kernel is built with gcc, which did not run (apt-get install gcc, or make setup): %w", cmdErr(err))
	}
	compiler, _, _ := strings.Cut(string(out), "\n")
	h := sha256.New()
	name := filepath.Base(deb)
	fmt.Fprintf(h, "%d:%s%d:%s%d:%s", len(guestConfig), guestConfig, len(compiler), compiler, len(name), name)
	return kernelBuild{deb: deb, compiler: compiler, key: hex.EncodeToString(h.Sum(nil))[:16]}, nil
}

// loadKernel returns the kernel a build left in dir/linux-<key>.
func loadKernel(dir, key string) (Kernel, error) {
	out := filepath.Join(dir, "linux-"+key)
	rel, err := os.ReadFile(filepath.Join(out, "release"))
	if err != nil {
		return Kernel{}, err
	}
	k := Kernel{Vmlinux: filepath.Join(out, "vmlinux"), Config: filepath.Join(out, "config"), Release: strings.TrimSpace(string(rel))}
	for _, p := range []string{k.Vmlinux, k.Config} {
		if _, err := os.Stat(p); err != nil {
			return Kernel{}, err
		}
	}
	return k, nil
}

// BuildKernel builds the guest kernel into dir (its debs folder holds the
// source package), unless dir already holds the one these inputs make, and
// removes the kernels other inputs made there.
func BuildKernel(ctx context.Context, dir string) (Kernel, error) {
	unlock, err := lockFolder(ctx, dir)
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel folder: %w", err)
	}
	defer unlock()
	kb, err := kernelBuildOf(ctx, filepath.Join(dir, "debs"))
	if err != nil {
		return Kernel{}, err
	}
	return buildKernel(ctx, dir, kb)
}

// kernelTools is what a kernel build runs or compiles against, beside the
// unpack's dpkg-deb, with the Debian package of each: Kconfig's parser
// needs bison and flex, kernel/time's constants bc, the source tarball xz,
// objtool libelf's headers.
var kernelTools = []struct{ cmd, file, pkg string }{
	{cmd: "make", pkg: "make"},
	{cmd: "gcc", pkg: "gcc"},
	{cmd: "bison", pkg: "bison"},
	{cmd: "flex", pkg: "flex"},
	{cmd: "bc", pkg: "bc"},
	{cmd: "xz", pkg: "xz-utils"},
	{file: "/usr/include/gelf.h", pkg: "libelf-dev"},
}

// missingKernelTools names, as one error, every tool of kernelTools this
// host lacks, before a build spends minutes to fail on the first of them.
func missingKernelTools(lookPath func(string) (string, error), stat func(string) (os.FileInfo, error)) error {
	var what, pkgs []string
	for _, t := range kernelTools {
		if t.cmd != "" {
			if _, err := lookPath(t.cmd); err != nil {
				what, pkgs = append(what, t.cmd), append(pkgs, t.pkg)
			}
		} else if _, err := stat(t.file); err != nil {
			what, pkgs = append(what, t.file), append(pkgs, t.pkg)
		}
	}
	if len(what) == 0 {
		return nil
	}
	return fmt.Errorf("building the guest kernel needs %s, which this host lacks (apt-get install %s, or make setup)", strings.Join(what, ", "), strings.Join(pkgs, " "))
}

// buildKernel builds kb's kernel into dir/linux-<key>: it unpacks the
// source, configures it with `make allnoconfig` over guestConfig and `make
// olddefconfig`, checks that every option of guestConfig landed, builds
// vmlinux and keeps it with its .config. The source tree (1.3 GB) goes
// once the build is done.
func buildKernel(ctx context.Context, dir string, kb kernelBuild) (Kernel, error) {
	if k, err := loadKernel(dir, kb.key); err == nil {
		return k, nil
	}
	if err := missingKernelTools(exec.LookPath, os.Stat); err != nil {
		return Kernel{}, err
	}
	out := filepath.Join(dir, "linux-"+kb.key)
	work := out + ".build"
	_ = os.RemoveAll(work)
	defer os.RemoveAll(work)
	src, obj := filepath.Join(work, "src"), filepath.Join(work, "obj")
	for _, d := range []string{src, obj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Kernel{}, fmt.Errorf("make the kernel build folder: %w", err)
		}
	}
	// run runs one step; meter, when not nil, counts what its output says
	// it built.
	run := func(what string, meter *progress.Meter, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = work
		// The same inputs give the same kernel, whoever builds it when.
		cmd.Env = append(os.Environ(), "KBUILD_BUILD_TIMESTAMP=1970-01-01", "KBUILD_BUILD_USER=nibrunner", "KBUILD_BUILD_HOST=nibrunner", "LC_ALL=C")
		// make runs sub-makes and compilers: a cancel ends them all, in
		// the process group of their own they run in.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		out := &buildOutput{m: meter}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s (%s %s, in %s): %w: %s", what, name, strings.Join(args, " "), work, err, lastLines(out.tail))
		}
		return nil
	}
	tarball := "usr/src/" + SourcePackage + ".tar.xz"
	stage(ctx, "unpacking %s", filepath.Base(kb.deb))
	if err := run("unpack the kernel source package", nil, "dpkg-deb", "-x", kb.deb, "pkg"); err != nil {
		return Kernel{}, err
	}
	if err := run("unpack the kernel source", nil, "tar", "-xJf", filepath.Join("pkg", tarball), "-C", "src", "--strip-components=1"); err != nil {
		return Kernel{}, fmt.Errorf("%w (%s should hold %s)", err, kb.deb, tarball)
	}
	_ = os.RemoveAll(filepath.Join(work, "pkg"))
	fragment := filepath.Join(work, "guest.config")
	if err := os.WriteFile(fragment, guestConfig, 0o644); err != nil {
		return Kernel{}, err
	}
	mk := func(what string, meter *progress.Meter, args ...string) error {
		return run(what, meter, "make", append([]string{"-C", "src", "O=../obj", "ARCH=x86_64"}, args...)...)
	}
	stage(ctx, "configuring it")
	if err := mk("configure the guest kernel", nil, "KCONFIG_ALLCONFIG=../guest.config", "allnoconfig"); err != nil {
		return Kernel{}, err
	}
	if err := mk("configure the guest kernel", nil, "olddefconfig"); err != nil {
		return Kernel{}, err
	}
	cfg, err := readKernelConfig(filepath.Join(obj, ".config"))
	if err != nil {
		return Kernel{}, err
	}
	if err := fragmentLanded(guestConfig, cfg); err != nil {
		return Kernel{}, fmt.Errorf("%s over %s: %w", "guest.config", filepath.Base(kb.deb), err)
	}
	// How many objects a configuration builds is not known ahead: the
	// meter counts them.
	meter := progress.New(progressOut(ctx), "building the guest kernel", "objects built", 0)
	if err := mk("build the guest kernel", meter, fmt.Sprintf("-j%d", runtime.NumCPU()), "vmlinux"); err != nil {
		return Kernel{}, err
	}
	meter.Done()
	vmlinux, err := os.ReadFile(filepath.Join(obj, "vmlinux"))
	if err != nil {
		return Kernel{}, fmt.Errorf("the kernel build left no vmlinux: %w", err)
	}
	if err := checkPVH(vmlinux); err != nil {
		return Kernel{}, fmt.Errorf("the built kernel: %w", err)
	}
	config, err := os.ReadFile(filepath.Join(obj, ".config"))
	if err != nil {
		return Kernel{}, err
	}
	release, err := os.ReadFile(filepath.Join(obj, "include", "config", "kernel.release"))
	if err != nil {
		return Kernel{}, fmt.Errorf("the kernel build left no release: %w", err)
	}
	k, err := keepKernel(dir, kb.key, map[string][]byte{"vmlinux": vmlinux, "config": config, "release": release, "inputs": []byte(filepath.Base(kb.deb) + "\n" + kb.compiler + "\n")})
	if err != nil {
		return Kernel{}, fmt.Errorf("keep the built kernel: %w", err)
	}
	return k, nil
}

// copyKernel copies a kernel built elsewhere (ahead of time) into
// dir/linux-<key>.
func copyKernel(from Kernel, dir, key string) (Kernel, error) {
	files := map[string][]byte{}
	for _, name := range []string{"vmlinux", "config", "release"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(from.Vmlinux), name))
		if err != nil {
			return Kernel{}, fmt.Errorf("copy the kernel built ahead: %w", err)
		}
		files[name] = b
	}
	k, err := keepKernel(dir, key, files)
	if err != nil {
		return Kernel{}, fmt.Errorf("copy the kernel built ahead: %w", err)
	}
	return k, nil
}

// keepKernel writes a kernel's files into dir/linux-<key> as one step
// (a folder beside it, renamed into place), then removes the kernels of
// other inputs there.
func keepKernel(dir, key string, files map[string][]byte) (Kernel, error) {
	out := filepath.Join(dir, "linux-"+key)
	tmp := out + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return Kernel{}, err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return Kernel{}, err
		}
	}
	_ = os.RemoveAll(out)
	if err := os.Rename(tmp, out); err != nil {
		return Kernel{}, err
	}
	removeOtherKernels(dir, key)
	return loadKernel(dir, key)
}

// removeOtherKernels deletes the kernels of other inputs in dir, and what
// builds that did not finish left. A guest still running one keeps its
// open file.
func removeOtherKernels(dir, key string) {
	old, _ := filepath.Glob(filepath.Join(dir, "linux-*"))
	for _, p := range old {
		if filepath.Base(p) != "linux-"+key {
			_ = os.RemoveAll(p)
		}
	}
}

// fragmentLanded checks that every option the fragment sets has that
// value in the final configuration, and that every option it leaves "not
// set" is so: Kconfig drops, without a word, an option whose dependencies
// are not met.
func fragmentLanded(fragment []byte, final kernelConfig) error {
	var missed []string
	for _, l := range strings.Split(string(fragment), "\n") {
		l = strings.TrimSpace(l)
		if name, ok := strings.CutPrefix(l, "# "); ok && strings.HasSuffix(name, " is not set") {
			name = strings.TrimSuffix(name, " is not set")
			if v, set := final[name]; set {
				missed = append(missed, fmt.Sprintf("%s is not set (the build has %s=%s)", name, name, v))
			}
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, want, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("%q is not a CONFIG_NAME=value line", l)
		}
		if got, set := final[name]; !set {
			missed = append(missed, fmt.Sprintf("%s (the build leaves it unset)", l))
		} else if got != want {
			missed = append(missed, fmt.Sprintf("%s (the build has %s)", l, got))
		}
	}
	if len(missed) == 0 {
		return nil
	}
	sort.Strings(missed)
	return fmt.Errorf("%d option(s) did not land in the kernel's .config, so their dependencies are not met; add those to the fragment: %s", len(missed), strings.Join(missed, "; "))
}
