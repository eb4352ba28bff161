package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/reconcile"
	"alpnib.dev/alpage/registrycopy"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/nns"
)

// copySource is what the copy is brought up to date through: the agent,
// which knows the root key it trusts.
type copySource interface {
	nns.Caller
	RootKey(ctx context.Context) ([]byte, error)
}

var _ copySource = (*agent.Agent)(nil)

// registryCopyTimeout bounds bringing the copy up to date.
const registryCopyTimeout = 2 * time.Minute

// openRegistryCopy brings the certified copy of the registry of a's
// network up to date and says so on progress: its version, and how many
// deltas it fetched in how many requests. The copy is kept under the user's
// cache folder ($XDG_CACHE_HOME/alp/registry/<root key hash>/).
func openRegistryCopy(ctx context.Context, a copySource, progress io.Writer) (*registrycopy.Copy, registrycopy.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, registryCopyTimeout)
	defer cancel()
	root, err := a.RootKey(ctx)
	if err != nil {
		return nil, registrycopy.Result{}, fmt.Errorf("registry copy: %w", err)
	}
	v, err := certificate.NewVerifier(root, certificate.Options{})
	if err != nil {
		return nil, registrycopy.Result{}, fmt.Errorf("registry copy: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, registrycopy.Result{}, fmt.Errorf("registry copy: %w", err)
	}
	c, res, err := registrycopy.Sync(ctx, registrycopy.Dir(cache, root), nns.RegistryClient{Caller: a}, v, progress)
	if err != nil {
		return nil, res, err
	}
	fmt.Fprintf(progress, "certified registry copy at version %d (%d delta(s) fetched in %d request(s); %s)\n", res.To, res.Deltas, res.Requests, c.Path())
	return c, res, nil
}

// refused is the error a command fails with when the copy could not be
// brought up to date because the endpoint's reply was refused (it does not
// verify, or is behind the copy: a replayed older answer is both). Reading
// the canister directly instead would take that endpoint's word for what
// the copy just refused, so the command stops, naming the reply; any other
// reason the copy cannot be used (its folder, its lock) is nil here, and
// the caller reads the canister with a warning.
func refused(err error) error {
	var r *registrycopy.RefusedError
	if errors.As(err, &r) {
		return err
	}
	return nil
}

// reconcileRegistry is what reconcile reads the registry through: the
// certified copy at its version, or, when the copy cannot be used here,
// the registry canister itself (and the explorer for the nodes of each
// operator), with a warning. A refused reply fails instead (refused).
func reconcileRegistry(ctx context.Context, a copySource, progress io.Writer) (reconcile.Registry, func(), error) {
	c, res, err := openRegistryCopy(ctx, a, progress)
	if err != nil {
		if r := refused(err); r != nil {
			return nil, nil, r
		}
		fmt.Fprintf(progress, "warning: %v; reading the registry canister directly, and each operator's nodes from the registry explorer\n", err)
		return nns.RegistryClient{Caller: a}, func() {}, nil
	}
	return c.At(res.To), func() { c.Close() }, nil
}

// electedFromCopy lists the elected versions from the certified copy at its
// version, or, when the copy cannot be used here, from the registry's
// change log, with a warning. A refused reply fails instead (refused).
func electedFromCopy(ctx context.Context, a copySource, progress io.Writer) ([]string, error) {
	c, res, err := openRegistryCopy(ctx, a, progress)
	if err != nil {
		if r := refused(err); r != nil {
			return nil, r
		}
		fmt.Fprintf(progress, "warning: %v; reading the elected versions from the registry canister directly\n", err)
		return electedVersions(ctx, nns.RegistryClient{Caller: a})
	}
	defer c.Close()
	ids, err := c.At(res.To).ElectedVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("guestos sync: read the elected versions: %w", err)
	}
	return ids, nil
}

// planFromCopy points f's registry reads at the certified copy, at its
// version; when the copy cannot be used here f reads the registry
// canister, with a warning, at the latest version read once. A refused reply fails instead (refused). The
// returned func closes the copy.
func planFromCopy(ctx context.Context, f *preflight.Fetcher, progress io.Writer) (func(), error) {
	rc, ok := f.Registry.(nns.RegistryClient)
	if !ok {
		return func() {}, nil
	}
	src, ok := rc.Caller.(copySource)
	if !ok {
		return func() {}, nil
	}
	c, res, err := openRegistryCopy(ctx, src, progress)
	if err != nil {
		if r := refused(err); r != nil {
			return nil, r
		}
		fmt.Fprintf(progress, "warning: %v; reading the registry canister directly\n", err)
		// at one version for the whole command, as the copy would be
		pinned, err := pinLatest(ctx, rc)
		if err != nil {
			return nil, err
		}
		f.Registry = pinned
		return func() {}, nil
	}
	f.Registry = c.At(res.To)
	return func() { c.Close() }, nil
}

// nodeStatusFlags are reconcile's bounds on reading node versions.
type nodeStatusFlags struct {
	parallel int
	connect  time.Duration
}

func (n *nodeStatusFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&n.parallel, "parallel", reconcile.DefaultVersionParallel, fmt.Sprintf("node status reads in flight (at most %d)", reconcile.MaxVersionParallel))
	cmd.Flags().DurationVar(&n.connect, "connect-timeout", source.DefaultConnectTimeout, "bound on connecting to a node's status endpoint; an unreachable node falls back to the dashboard")
}

func (n *nodeStatusFlags) check() error {
	if n.parallel < 1 || n.parallel > reconcile.MaxVersionParallel {
		return fmt.Errorf("--parallel %d: want 1 to %d", n.parallel, reconcile.MaxVersionParallel)
	}
	if n.connect <= 0 {
		return fmt.Errorf("--connect-timeout %v: want a positive duration", n.connect)
	}
	return nil
}
