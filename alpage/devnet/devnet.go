package devnet

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"google.golang.org/protobuf/encoding/protowire"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
	"alpnib.dev/internal/atomicfile"
)

// Options configure a devnet.
type Options struct {
	Fleet *Fleet
	// Dir receives identity.pem and node-ca.pem; it is created if missing.
	Dir string
	// Latency delays every request to every endpoint.
	Latency time.Duration
	// VotingPeriod keeps proposals open that long; zero adopts and
	// executes each proposal as it is made.
	VotingPeriod time.Duration
	// Now is governance's clock, which its voting deadlines are kept by;
	// nil means time.Now. A test that moves it calls Governance.Tick
	// itself rather than wait for the devnet's once-a-second tick.
	Now func() time.Time
	// Executor runs adopted ExecuteNnsFunction proposals against Registry;
	// nil means localnet.RegistryExecutor, which decodes the Candid payload
	// and runs the registry method.
	Executor func(*registry.Registry) governance.Executor
	// IC is mounted as the IC HTTP interface; nil means a localnet replica
	// hosting the registry and governance canisters.
	IC func(*registry.Registry, *governance.Governance) (http.Handler, error)
	// History, when above the seed's own versions, makes the registry
	// start at that version: the node operator records are written again,
	// one version each, in turn, as mainnet's registry has a long history
	// of such updates (it was near version 52,000 in mid-2025), so that a
	// cold registry sync pages through many replies.
	History int
	// Subnets is the localnet replica's number of subnets: 1 (when zero),
	// or 2, which keeps the registry and governance on the root (NNS)
	// subnet, as on mainnet, and adds a second subnet certified under a
	// delegation from it. The devnet hosts no other canister, so the
	// second subnet hosts none; what is sent to a canister id in its range
	// is answered (refused as an unknown canister) under the delegation.
	Subnets int
	// DropCalls is how many update calls the IC interface executes and
	// then answers by closing the connection, before it answers normally.
	DropCalls int
}

// Devnet is a running devnet. Close stops it.
type Devnet struct {
	Registry   *registry.Registry
	Governance *governance.Governance
	KDS        *KDS

	Identity     principal.Principal
	IdentityPath string
	Neuron       uint64
	NodeCAPath   string

	ICURL, ExplorerURL, DashboardURL, KDSURL string
	// NodeStatusURLs maps a reachable node's id to its status base URL.
	NodeStatusURLs map[string]string

	servers  []*http.Server
	throttle *throttle
	drop     *dropAfterCall
	closers  []func() error // endpoints of unreachable nodes
	wg       sync.WaitGroup
	stop     context.CancelFunc
}

// EnvVar is one setting printed as `export NAME=value`.
type EnvVar struct{ Name, Value string }

// Env is what points alp at the devnet, in a stable order.
func (d *Devnet) Env() []EnvVar {
	var env []EnvVar
	env = append(env,
		EnvVar{"ALP_HOST", d.ICURL},
		EnvVar{"ALP_FETCH_ROOT_KEY", "true"},
		EnvVar{"ALP_EXPLORER_URL", d.ExplorerURL},
		EnvVar{"ALP_DASHBOARD_URL", d.DashboardURL},
		EnvVar{"ALP_KDS_URL", d.KDSURL},
		EnvVar{"ALP_NODE_STATUS_CA", d.NodeCAPath},
		EnvVar{"ALP_IDENTITY", d.IdentityPath},
	)
	if d.Neuron != 0 {
		env = append(env, EnvVar{"ALP_NEURON", fmt.Sprint(d.Neuron)})
	}
	return env
}

// Start seeds a registry and governance from the fleet, writes the identity,
// and starts every endpoint on 127.0.0.1. It returns once all listen.
func Start(ctx context.Context, opts Options) (d *Devnet, err error) {
	if opts.Fleet == nil {
		return nil, errors.New("devnet: no fleet")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("devnet: create %s: %w", opts.Dir, err)
	}
	id, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("devnet: generate identity: %w", err)
	}
	pemBytes, err := id.PEM()
	if err != nil {
		return nil, fmt.Errorf("devnet: encode identity: %w", err)
	}
	d = &Devnet{
		Registry:       registry.New(),
		Identity:       id.Sender(),
		IdentityPath:   filepath.Join(opts.Dir, "identity.pem"),
		NodeCAPath:     filepath.Join(opts.Dir, "node-ca.pem"),
		NodeStatusURLs: map[string]string{},
	}
	if err := atomicfile.WriteFile(d.IdentityPath, pemBytes, 0o600); err != nil {
		return nil, fmt.Errorf("devnet: write identity: %w", err)
	}
	if opts.Executor == nil {
		opts.Executor = localnet.RegistryExecutor
	}
	if opts.IC == nil {
		subnets := opts.Subnets
		opts.IC = func(reg *registry.Registry, gov *governance.Governance) (http.Handler, error) {
			return localReplica(reg, gov, subnets)
		}
	}
	exec := opts.Executor(d.Registry)
	d.Governance = governance.New(governance.Config{VotingPeriod: opts.VotingPeriod, Now: opts.Now}, exec)
	d.Neuron, _ = opts.Fleet.IdentityNeuron()

	runCtx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()

	// node status endpoints first: their ports go into the node records
	cert, certPEM, err := SelfSignedCert()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(d.NodeCAPath, certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("devnet: write node certificate: %w", err)
	}
	ports := map[string]nodeAddr{}
	seeded := seededFrom(opts.Fleet)
	for _, n := range opts.Fleet.Nodes {
		var addr *net.TCPAddr
		if n.IsReachable() {
			ln, err := listenLoopback()
			if err != nil {
				return nil, fmt.Errorf("devnet: listen for node %s: %w", n.ID, err)
			}
			addr = ln.Addr().(*net.TCPAddr)
			d.NodeStatusURLs[n.ID] = "https://" + addr.String()
			id, version := n.ID, n.Version
			d.serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}),
				WithLatency(opts.Latency, &NodeStatus{Version: func() string { return d.running(id, version, seeded) }, Health: n.replicaHealth}))
		} else if addr, err = d.listenOutage(n.Outage()); err != nil {
			return nil, fmt.Errorf("devnet: endpoint of unreachable node %s: %w", n.ID, err)
		}
		ports[n.ID] = nodeAddr{ip: addr.IP.String(), port: uint32(addr.Port)}
	}

	elections, err := d.seed(opts.Fleet, ports)
	if err != nil {
		return nil, err
	}
	if err := d.history(opts.Fleet, opts.History); err != nil {
		return nil, err
	}

	chips := map[string]string{}
	var limited []string
	for _, n := range opts.Fleet.Nodes {
		if n.ChipID != "" && n.ChipProduct != "" {
			chips[n.ChipID] = n.ChipProduct
		}
		if n.ChipID != "" && n.ChipRateLimited {
			limited = append(limited, n.ChipID)
		}
	}
	if d.KDS, err = NewKDS(chips, limited); err != nil {
		return nil, err
	}

	fleet := opts.Fleet
	purged := purgedProposals(fleet)
	dash := &Dashboard{
		Proposals: func() []DashboardProposal {
			live := DashboardProposals(d.Governance, func(id uint64) any {
				if v, ok := elections[id]; ok {
					return map[string]any{"replica_version_to_elect": v, "replica_versions_to_unelect": []string{}, "release_package_urls": []string{}}
				}
				return nil
			})
			return append(append([]DashboardProposal(nil), purged...), live...)
		},
		Node:  func(id string) (DashboardNode, bool) { return d.dashboardNode(fleet, id) },
		Nodes: func() []DashboardNode { return d.dashboardNodes(fleet) },
	}
	for _, s := range []struct {
		url *string
		h   http.Handler
	}{
		{&d.ExplorerURL, &Explorer{Registry: d.Registry}},
		{&d.DashboardURL, dash},
		{&d.KDSURL, d.KDS},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("devnet: listen: %w", err)
		}
		*s.url = "http://" + ln.Addr().String()
		d.serve(ln, WithLatency(opts.Latency, s.h))
	}
	h, err := opts.IC(d.Registry, d.Governance)
	if err != nil {
		return nil, fmt.Errorf("devnet: local replica: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("devnet: listen: %w", err)
	}
	d.ICURL = "http://" + ln.Addr().String()
	if opts.DropCalls > 0 {
		d.drop = &dropAfterCall{next: h, left: opts.DropCalls}
		h = d.drop
	}
	d.throttle = &throttle{h: h}
	d.serve(ln, WithLatency(opts.Latency, d.throttle))
	if opts.VotingPeriod > 0 {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
					d.Governance.Tick()
				}
			}
		}()
	}
	return d, ctx.Err()
}

// nodeAddr is where a node's endpoint listens (on loopback), as its
// registry record's http endpoint says.
type nodeAddr struct {
	ip   string
	port uint32
}

// localReplica is the default IC HTTP interface: a localnet replica of
// that many subnets with the NNS canisters over the devnet's registry and
// governance, on the root subnet.
func localReplica(reg *registry.Registry, gov *governance.Governance, subnets int) (http.Handler, error) {
	s, err := localnet.New(localnet.Options{Subnets: subnets})
	if err != nil {
		return nil, err
	}
	s.InstallNNS(reg, gov)
	return s, nil
}

func (d *Devnet) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	d.servers = append(d.servers, srv)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// Close stops every endpoint and waits for them.
func (d *Devnet) Close() error {
	if d.stop != nil {
		d.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, s := range d.servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range d.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	d.wg.Wait()
	return errors.Join(errs...)
}

// seed writes the fleet into the registry and governance; it returns the
// election proposals it made, by id, with the version each elected.
func (d *Devnet) seed(f *Fleet, ports map[string]nodeAddr) (map[uint64]string, error) {
	ref := func(s string) principal.Principal {
		if s == IdentityRef {
			return d.Identity
		}
		return principal.MustDecode(s) // checked by ParseFleet
	}
	for _, dc := range f.DataCenters {
		d.Registry.AddDataCenter(registry.DataCenter{ID: dc.ID, Region: dc.Region, Owner: dc.Owner})
	}
	for _, op := range f.NodeOperators {
		d.Registry.AddNodeOperator(registry.NodeOperator{ID: ref(op.ID), Provider: ref(op.Provider), DataCenter: op.DC, NodeAllowance: op.Allowance})
	}
	for _, n := range f.Nodes {
		a := ports[n.ID]
		node := registry.Node{ID: ref(n.ID), Operator: ref(n.Operator), IPv6: a.ip, HTTPPort: a.port, HostOS: n.HostOS}
		if n.ChipID != "" {
			node.ChipID, _ = hex.DecodeString(n.ChipID)
		}
		if t, ok := nns.RewardTypeNamed(n.RewardType); ok {
			node.RewardType = &t
		}
		if _, err := d.Registry.AddNode(node); err != nil {
			return nil, fmt.Errorf("devnet: seed: %w", err)
		}
	}
	for _, v := range f.HostOSVersions {
		// its presence elects it: a HostosVersionRecord naming itself
		// (hostos_version_id = 3, docs/decisions.md), as every record
		// has a value
		rec := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), v)
		d.Registry.Apply([]registry.Mutation{{Key: nns.HostosVersionRecordKey(v), Value: rec}})
	}
	for _, p := range f.PurgedProposals {
		d.Governance.SkipIDs(p.ID + 1)
	}
	elections := map[uint64]string{}
	start := time.Now().Add(-30 * 24 * time.Hour)
	for i, v := range f.Versions {
		if !v.IsElected() {
			continue
		}
		d.Registry.ElectVersion(v.ID, nns.ReplicaVersionRecordPB{
			ReleasePackageSha256Hex: strings.Repeat("0", 64),
			ReleasePackageURLs:      []string{"https://download.dfinity.systems/ic/" + v.ID + "/guest-os/update-img/update-img.tar.zst"},
		})
		at := uint64(start.Add(time.Duration(i) * 24 * time.Hour).Unix())
		title := "Elect new IC/Replica revision (commit " + v.ID[:min(7, len(v.ID))] + ")"
		summary := "Release Notes for [" + strings.ReplaceAll(v.Release, "_", `\_`) + "](https://github.com/dfinity/ic/tree/" + v.Release + ") (" + v.ID + ")"
		id := d.Governance.SeedProposal(nns.ProposalInfo{
			Status: int32(nns.StatusExecuted), Topic: int32(nns.TopicIcOsVersionElection),
			ProposalTimestampSeconds: at, DecidedTimestampSeconds: at, ExecutedTimestampSeconds: at,
			LatestTally: &nns.Tally{Yes: 1, Total: 1, TimestampSeconds: at},
			Proposal: &nns.Proposal{Title: &title, Summary: summary, URL: "https://forum.dfinity.org/",
				Action: &nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(nns.FunctionReviseElectedGuestosVersions)}}},
		})
		elections[id] = v.ID
	}
	for _, s := range f.Subnets {
		typ, _ := nns.SubnetTypeNamed(orDefault(s.Type, "application"))
		sub := registry.Subnet{ID: ref(s.ID), ReplicaVersion: s.Version, SevEnabled: s.SevEnabled, IsHalted: s.IsHalted}
		if l := s.ResourceLimits; l != nil {
			sub.ResourceLimits = &nns.ResourceLimitsRecord{MaximumStateSize: l.MaximumStateSize, MaximumStateDelta: l.MaximumStateDelta,
				MaximumQueryInstructions: l.MaximumQueryInstructions, MaximumQueryWalltimeSeconds: l.MaximumQueryWalltimeSeconds}
		}
		sub.Type = map[string]int32{"application": nns.SubnetTypeApplication, "verified_application": nns.SubnetTypeVerifiedApplication,
			"system": nns.SubnetTypeSystem, "cloud_engine": nns.SubnetTypeCloudEngine}[typ.Name()]
		switch s.CostSchedule {
		case "free":
			sub.CostSchedule = nns.CostScheduleFree
		case "normal":
			sub.CostSchedule = nns.CostScheduleNormal
		}
		for _, a := range s.Admins {
			sub.Admins = append(sub.Admins, ref(a))
		}
		for _, m := range s.Members {
			sub.Members = append(sub.Members, ref(m))
		}
		if _, err := d.Registry.AddSubnet(sub); err != nil {
			return nil, fmt.Errorf("devnet: seed: %w", err)
		}
	}
	for _, p := range f.NodeProviders {
		d.Governance.AddNodeProvider(ref(p.ID))
	}
	for _, n := range f.Neurons {
		neuron := governance.Neuron{ID: n.ID, Controller: ref(n.Controller), StakeE8s: n.StakeE8s, DissolveDelaySeconds: 8 * 365 * 24 * 3600}
		for _, h := range n.HotKeys {
			neuron.HotKeys = append(neuron.HotKeys, ref(h))
		}
		d.Governance.AddNeuron(neuron)
	}
	return elections, nil
}

// dashboardNode renders what the dashboard says about a node: its fleet
// version (or dashboard_version) and its live registry placement.
func (d *Devnet) dashboardNode(f *Fleet, id string) (DashboardNode, bool) {
	for i := range f.Nodes {
		if f.Nodes[i].ID == id {
			return d.dashboardNodeOf(id, &f.Nodes[i], seededFrom(f))
		}
	}
	return d.dashboardNodeOf(id, nil, seed{})
}

// dashboardNodes is every node the registry holds, as the dashboard's
// GET /api/v3/nodes lists them.
func (d *Devnet) dashboardNodes(f *Fleet) []DashboardNode {
	seeded := seededFrom(f)
	inFleet := make(map[string]*FleetNode, len(f.Nodes))
	for i := range f.Nodes {
		inFleet[f.Nodes[i].ID] = &f.Nodes[i]
	}
	var out []DashboardNode
	for _, p := range d.Registry.Nodes() {
		if n, ok := d.dashboardNodeOf(p.String(), inFleet[p.String()], seeded); ok {
			out = append(out, n)
		}
	}
	return out
}

// dashboardNodeOf renders node id, n its fleet entry (nil for a node the
// fleet does not name: no version, never down).
func (d *Devnet) dashboardNodeOf(id string, n *FleetNode, seeded seed) (DashboardNode, bool) {
	p, err := principal.Decode(id)
	if err != nil {
		return DashboardNode{}, false
	}
	rec, ok, err := d.Registry.Node(p)
	if err != nil || !ok {
		return DashboardNode{}, false
	}
	out := DashboardNode{NodeID: id, Status: "UNASSIGNED", NodeType: "REPLICA"}
	if op, err := principal.FromBytes(rec.NodeOperatorID); err == nil {
		out.NodeOperatorID = op.String()
		if o, ok, _ := d.Registry.NodeOperator(op); ok {
			out.DcID = o.DcID
			out.NodeProviderID = principalText(o.NodeProviderPrincipalID)
			if dc, ok, _ := d.Registry.DataCenter(o.DcID); ok {
				out.DcName, out.Owner, out.Region = dc.ID, dc.Owner, dc.Region
			}
		}
	}
	if s, in, _ := d.Registry.SubnetOf(p); in {
		sub := s.String()
		out.SubnetID, out.Status = &sub, "UP"
	}
	if rec.HTTP != nil {
		out.IPAddress = rec.HTTP.IPAddr
	}
	if n == nil {
		return out, true
	}
	out.GuestosVersion = d.running(id, orDefault(n.DashboardVersion, n.Version), seeded)
	switch {
	case !n.IsReachable():
		out.Status = "DOWN" // what the dashboard says of a node that does not answer
	case n.Health == Lagging:
		out.Status = "DEGRADED"
	}
	return out, true
}

// purgedProposals renders the fleet's purged proposals the dashboard way,
// oldest first.
func purgedProposals(f *Fleet) []DashboardProposal {
	var out []DashboardProposal
	for _, p := range f.PurgedProposals {
		proposed, _ := time.Parse(time.RFC3339, p.Proposed) // checked by ParseFleet
		decided, _ := time.Parse(time.RFC3339, p.Decided)
		dp := DashboardProposal{
			ID: p.ID, ProposalID: p.ID, Title: p.Title, Summary: p.Summary, Topic: p.Topic, Status: p.Status,
			ProposalTimestampSeconds: uint64(proposed.Unix()), DecidedTimestampSeconds: uint64(decided.Unix()),
			DeadlineTimestampSeconds: uint64(decided.Unix()),
			LatestTally:              &dashboardTally{Yes: 1, Total: 1, TimestampSeconds: uint64(decided.Unix())},
		}
		switch p.Status {
		case "EXECUTED":
			dp.ExecutedTimestampSeconds = dp.DecidedTimestampSeconds
		case "FAILED":
			dp.FailedTimestampSeconds = dp.DecidedTimestampSeconds
			dp.FailureReason = &dashboardError{ErrorMessage: p.Failure, ErrorType: nns.ErrorTypeExternal}
		case "REJECTED":
			dp.LatestTally = &dashboardTally{No: 1, Total: 1, TimestampSeconds: uint64(decided.Unix())}
		}
		out = append(out, dp)
	}
	slices.SortFunc(out, func(a, b DashboardProposal) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// history writes the fleet's node operator records again, in turn, one
// registry version each, until the registry is at version n.
func (d *Devnet) history(f *Fleet, n int) error {
	if n <= 0 || uint64(n) <= d.Registry.Version() {
		return nil
	}
	if len(f.NodeOperators) == 0 {
		return fmt.Errorf("devnet: --history needs a node operator in the fleet to write")
	}
	var keys []string
	var values [][]byte
	for _, op := range f.NodeOperators {
		key := nns.NodeOperatorRecordKey(op.ID)
		v, _, ok := d.Registry.Get(key)
		if !ok {
			return fmt.Errorf("devnet: history: no record %s", key)
		}
		keys, values = append(keys, key), append(values, v)
	}
	for i := 0; d.Registry.Version() < uint64(n); i++ {
		d.Registry.Apply([]registry.Mutation{{Key: keys[i%len(keys)], Value: values[i%len(keys)]}})
	}
	return nil
}
