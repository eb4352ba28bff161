package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Tool confines a host program that parses what a tenant wrote (e2fsck
// and resize2fs reading a volume's ext4) the way a VMM is confined: the
// launcher runs it as a uid and gid of its own, in empty namespaces
// (network included) with a root that holds only the system folders and
// the files it is lent, with no capability, no_new_privs, the launcher's
// seccomp filter, its limits and an oom_score_adj above the daemon's.
type Tool struct {
	// Root is an empty folder the launcher mounts the tool's root over,
	// in its own mount namespace (made if missing).
	Root string
	// ID is the tools' identity (Range.ToolID).
	ID Identity
}

// toolNoFile bounds a tool's descriptors: e2fsprogs holds a handful.
const toolNoFile = 64

// Run runs program with args and env confined, lending it the files rw
// (the tool's uid's while it runs, root's again after), and returns what
// it printed, stdout and stderr together. A program that exits non-zero
// returns an *exec.ExitError, as exec.Cmd.Run does.
func (t Tool) Run(ctx context.Context, rw, env []string, program string, args ...string) (string, error) {
	if err := os.MkdirAll(t.Root, 0o700); err != nil {
		return "", fmt.Errorf("jail: make the tools' mount point: %w", err)
	}
	binds, err := RootBinds(Files{Program: program, ReadWrite: rw})
	if err != nil {
		return "", err
	}
	var largest int64
	for _, p := range rw {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("jail: lend %s to %s: %w", p, program, err)
		}
		largest = max(largest, st.Size())
	}
	daemonAdj, err := SelfOOMScoreAdj()
	if err != nil {
		return "", err
	}
	cmd, err := Command(Plan{
		Root: t.Root, Binds: binds, Identity: t.ID, Groups: []int{},
		Program: program, Args: args, Env: append([]string{}, env...),
		Rlimits:     Rlimits{NoFile: toolNoFile, FileSize: FileSizeFor(0, largest)},
		OOMScoreAdj: OOMScoreAdjAbove(daemonAdj),
	}, true)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	for i, p := range rw {
		if err := os.Lchown(p, t.ID.UID, t.ID.GID); err != nil {
			giveBack(rw[:i])
			return "", fmt.Errorf("jail: lend %s to uid %d: %w", p, t.ID.UID, err)
		}
	}
	defer giveBack(rw)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("jail: start %s: %w", program, err)
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-stopped:
		}
	}()
	err = cmd.Wait()
	close(stopped)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return strings.TrimSpace(out.String()), err
}

// giveBack makes the lent files root's again.
func giveBack(files []string) {
	for _, p := range files {
		if err := os.Lchown(p, 0, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "jail: give %s back to root: %v\n", p, err)
		}
	}
}
