package reconcile

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Registry is what the fetcher reads from the registry canister;
// nns.RegistryClient satisfies it.
type Registry interface {
	GetLatestVersion(ctx context.Context) (uint64, error)
	GetValue(ctx context.Context, key string, version uint64) ([]byte, uint64, bool, error)
	GetNodeOperatorsAndDcsOfNodeProvider(ctx context.Context, provider principal.Principal) ([]nns.OperatorAndDc, error)
}

// NodeLister is a Registry that also lists the nodes whose records name an
// operator (registrycopy.View does, from the node records at its
// version); the fetcher then asks it instead of the explorer.
type NodeLister interface {
	OperatorNodes(ctx context.Context, operator string) ([]string, error)
}

// Governance is what the fetcher reads from governance;
// nns.GovernanceClient satisfies it.
type Governance interface {
	ListNodeProviders(ctx context.Context) ([]nns.NodeProvider, error)
}

// Explorer lists the nodes an operator owns; *source.Explorer satisfies it.
type Explorer interface {
	OperatorNodes(ctx context.Context, operator string) ([]string, error)
}

// Dashboard says which version a node runs, with a lag;
// *source.Dashboard satisfies it.
type Dashboard interface {
	NodeVersion(ctx context.Context, node string) (string, bool, error)
}

// nodeStatusDashboard is a Dashboard that also says whether a node is up;
// *source.Dashboard is one.
type nodeStatusDashboard interface {
	Node(ctx context.Context, node string) (source.DashboardNode, bool, error)
}

// nodeListDashboard is a Dashboard that also lists every node it knows,
// with its status, in one request; *source.Dashboard is one.
type nodeListDashboard interface {
	Nodes(ctx context.Context) (map[string]source.DashboardNode, error)
}

// DefaultFirstAttempt bounds the first read of a node's status: a live
// node answers well within it, so one that does not is asked again with
// the whole connect timeout only when the dashboard does not say it is
// failing (statusSays). A dead node costs this, not the connect timeout,
// on every run.
const DefaultFirstAttempt = 300 * time.Millisecond

// KDS vouches for chips; *source.KDS satisfies it.
type KDS interface {
	Verify(ctx context.Context, chip []byte) source.Verdict
}

// NodeStatus reads a node's own impl_version; *source.NodeStatus
// satisfies it.
type NodeStatus interface {
	Version(ctx context.Context, ip string, port uint32) (string, error)
}

// certificateChecker is a NodeStatus that says whether it verifies the
// nodes' TLS certificates; one that does not say is taken to verify them.
type certificateChecker interface{ ChecksCertificates() bool }

// Fetcher gathers Live. The registry version is the one hard requirement:
// without it nothing is known and Fetch fails. Every other read that fails
// is recorded beside the fact it was for and reported as unknown.
type Fetcher struct {
	Registry   Registry
	Governance Governance
	Explorer   Explorer
	Dashboard  Dashboard
	KDS        KDS
	NodeStatus NodeStatus
	// Parallel bounds reads in flight; 0 means 8.
	Parallel int
	// VersionParallel bounds the node status reads in flight, apart from
	// the others (each goes to its own node); 0 means DefaultVersionParallel.
	VersionParallel int
	// Timeout bounds each read; 0 means 30 seconds.
	Timeout time.Duration
	// FirstAttempt bounds the first read of each node's status; 0 means
	// DefaultFirstAttempt.
	FirstAttempt time.Duration
	// ListWait bounds the wait for the dashboard's list of nodes after
	// the registry reads; 0 means DefaultListWait.
	ListWait time.Duration
}

// kdsParallel bounds KDS requests in flight below the general bound: AMD
// rate limits its service, and a 429 only makes a verdict inconclusive.
const kdsParallel = 2

// Fetch reads what reconciling res needs. cache is state.json's chip
// cache: a chip it vouches for is not asked again unless refresh is set.
func (f *Fetcher) Fetch(ctx context.Context, res *config.Resources, cache map[string]*state.Chip, refresh bool) (*Live, error) {
	list, stopList := f.nodeList(ctx, res)
	defer stopList()
	vctx, cancel := context.WithTimeout(ctx, f.timeout())
	v, err := f.Registry.GetLatestVersion(vctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read the registry version: %w", err)
	}
	live := &Live{
		RegistryVersion: v,
		Subnets:         map[string]SubnetFacts{},
		DataCenters:     map[string]DataCenterFacts{},
		Providers:       map[string]ProviderFacts{},
		Operators:       map[string]OperatorFacts{},
		OperatorNodes:   map[string]OperatorNodes{},
		Nodes:           map[string]NodeFacts{},
		Chips:           map[string]ChipFacts{},
		Versions:        map[string]VersionFacts{},
		Elected:         map[string]bool{},
		HostOSElected:   map[string]bool{},
	}
	// Every registry record is read at the version just read, so one
	// report never mixes two registry states.
	at := registryAt{r: f.Registry, version: v}
	var mu sync.Mutex
	g := f.group(ctx)

	// Everything the registry, governance and the explorer say, at once.
	subnets := undeclaredSubnets(res)
	for _, s := range res.Subnets {
		subnets = append(subnets, s.ID)
	}
	// Whether a declared node sits in a subnet no block declares (one it
	// says it is not in) is written only in that subnet's record, so with
	// any node declared every subnet the registry lists is read.
	if len(res.Nodes) > 0 {
		var list nns.SubnetListRecordPB
		lctx, cancel := context.WithTimeout(ctx, f.timeout())
		_, err := at.record(lctx, nns.SubnetListKey, &list)
		cancel()
		if err != nil {
			live.SubnetListErr = err.Error()
		}
		for _, b := range list.Subnets {
			if id := principalText(b); !slices.Contains(subnets, id) {
				subnets = append(subnets, id)
			}
		}
	}
	for _, id := range subnets {
		g.run(func(ctx context.Context) {
			facts := at.subnet(ctx, id)
			mu.Lock()
			live.Subnets[id] = facts
			mu.Unlock()
		})
	}
	for _, dc := range res.DataCenters {
		g.run(func(ctx context.Context) {
			facts := at.dataCenter(ctx, dc.ID)
			mu.Lock()
			live.DataCenters[dc.ID] = facts
			mu.Unlock()
		})
	}
	providers := providerIDs(res)
	if len(providers) > 0 && len(res.NodeProviders) > 0 {
		known, kerr := f.knownProviders(ctx)
		for _, p := range providers {
			g.run(func(ctx context.Context) {
				facts := f.provider(ctx, p, known, kerr)
				mu.Lock()
				live.Providers[p] = facts
				mu.Unlock()
			})
		}
		for _, o := range res.NodeOperators {
			g.run(func(ctx context.Context) {
				facts := at.operator(ctx, o.ID)
				mu.Lock()
				live.Operators[o.ID] = facts
				mu.Unlock()
			})
		}
	}
	lister, fromRegistry := f.Registry.(NodeLister)
	for _, o := range res.NodeOperators {
		if o.Decommissioned || (!fromRegistry && f.Explorer == nil) {
			continue
		}
		g.run(func(ctx context.Context) {
			var on OperatorNodes
			if fromRegistry {
				ids, err := lister.OperatorNodes(ctx, o.ID)
				on = OperatorNodes{Nodes: ids, Err: errText(err), FromRegistry: true}
			} else {
				ids, err := f.Explorer.OperatorNodes(ctx, o.ID)
				on = OperatorNodes{Nodes: ids, Err: errText(err)}
			}
			mu.Lock()
			live.OperatorNodes[o.ID] = on
			mu.Unlock()
		})
	}
	for _, n := range res.Nodes {
		g.run(func(ctx context.Context) {
			facts := at.node(ctx, n.ID)
			mu.Lock()
			live.Nodes[n.ID] = facts
			mu.Unlock()
		})
	}
	for _, id := range versionIDs(res) {
		g.run(func(ctx context.Context) {
			elected, err := at.has(ctx, nns.ReplicaVersionRecordKey(id))
			mu.Lock()
			if err != nil {
				live.ElectedErr = joinDetail(live.ElectedErr, err.Error())
			}
			live.Elected[id] = elected
			mu.Unlock()
		})
	}
	for _, id := range hostOSIDs(res) {
		g.run(func(ctx context.Context) {
			elected, err := at.has(ctx, nns.HostosVersionRecordKey(id))
			mu.Lock()
			if err != nil {
				live.HostOSElectedErr = joinDetail(live.HostOSElectedErr, err.Error())
			}
			live.HostOSElected[id] = elected
			mu.Unlock()
		})
	}
	g.wait()
	listed := list()

	// Then what depends on the node records: chips and versions.
	g = f.group(ctx)
	asked := map[string]bool{}
	kdsSlots := make(chan struct{}, kdsParallel)
	for _, n := range res.Nodes {
		nf := live.Nodes[n.ID]
		if n.Decommissioned || !nf.Found || len(nf.Chip) != config.ChipIDLen {
			continue
		}
		chip := nf.Chip
		h := hex.EncodeToString(chip)
		if asked[h] {
			continue
		}
		asked[h] = true
		c := ChipFacts{}
		if e := cache[h]; e != nil && e.Verified {
			c.Cached, c.Product = true, e.Product
		}
		mu.Lock()
		live.Chips[h] = c
		mu.Unlock()
		if (c.Cached && !refresh) || f.KDS == nil {
			continue
		}
		g.run(func(ctx context.Context) {
			kdsSlots <- struct{}{}
			verdict := f.KDS.Verify(ctx, chip)
			<-kdsSlots
			mu.Lock()
			c := live.Chips[h]
			c.Asked = &verdict
			live.Chips[h] = c
			mu.Unlock()
		})
	}
	// Node versions under their own bound: each read goes to another
	// node, so many can be in flight without loading any one service.
	vg := f.versionGroup(ctx)
	nodes := versionNodes(res)
	// the nodes the dashboard says are failing first: their short waits
	// then overlap the other reads instead of trailing them
	failing := func(n *config.Node) int { return boolRank(statusSays(listed[n.ID].Status) == saysFailing) }
	slices.SortStableFunc(nodes, func(a, b *config.Node) int { return failing(b) - failing(a) })
	for _, n := range nodes {
		nf := live.Nodes[n.ID]
		var l *source.DashboardNode
		if d, ok := listed[n.ID]; ok {
			l = &d
		}
		vg.run(func(ctx context.Context) {
			facts := f.version(ctx, n.ID, nf, l)
			mu.Lock()
			live.Versions[n.ID] = facts
			mu.Unlock()
		})
	}
	g.wait()
	vg.wait()
	return live, ctx.Err()
}

// providerIDs lists the declared providers and every provider a declared
// operator names, once each.
func providerIDs(res *config.Resources) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range res.NodeProviders {
		if !seen[p.ID] {
			seen[p.ID] = true
			out = append(out, p.ID)
		}
	}
	for _, o := range res.NodeOperators {
		if o.Provider != "" && !seen[o.Provider] {
			seen[o.Provider] = true
			out = append(out, o.Provider)
		}
	}
	return out
}

func (at registryAt) subnet(ctx context.Context, id string) SubnetFacts {
	var rec nns.SubnetRecordPB
	found, err := at.record(ctx, nns.SubnetRecordKey(id), &rec)
	switch {
	case err != nil:
		return SubnetFacts{Err: err.Error()}
	case !found:
		return SubnetFacts{}
	}
	return subnetFactsOf(&rec)
}

// subnetFactsOf reads the facts reconcile compares from a subnet record.
func subnetFactsOf(rec *nns.SubnetRecordPB) SubnetFacts {
	out := SubnetFacts{Found: true, ReplicaVersion: rec.ReplicaVersionID}
	for _, m := range rec.Membership {
		out.Members = append(out.Members, principalText(m))
	}
	switch rec.SubnetType {
	case nns.SubnetTypeApplication:
		out.Type = config.SubnetApplication
	case nns.SubnetTypeVerifiedApplication:
		out.Type = "verified_application"
	case nns.SubnetTypeSystem:
		out.Type = "system"
	case nns.SubnetTypeCloudEngine:
		out.Type = config.SubnetCloudEngine
	default:
		out.Type = fmt.Sprintf("unspecified(%d)", rec.SubnetType)
	}
	switch rec.CanisterCyclesCostSchedule {
	case nns.CostScheduleNormal:
		out.CostSchedule = "normal"
	case nns.CostScheduleFree:
		out.CostSchedule = "free"
	}
	if rec.Features != nil && rec.Features.SevEnabled != nil {
		out.SevEnabled = *rec.Features.SevEnabled
	}
	for _, a := range rec.SubnetAdmins {
		out.Admins = append(out.Admins, principalText(a))
	}
	return out
}

func (f *Fetcher) knownProviders(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	list, err := f.Governance.ListNodeProviders(ctx)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, p := range list {
		if p.ID != nil {
			known[p.ID.String()] = true
		}
	}
	return known, nil
}

func (f *Fetcher) provider(ctx context.Context, id string, known map[string]bool, kerr error) ProviderFacts {
	if kerr != nil {
		return ProviderFacts{Err: kerr.Error(), ErrFrom: ReadGovernance}
	}
	p, err := principal.Decode(id)
	if err != nil {
		return ProviderFacts{Err: fmt.Sprintf("node provider %q: %v", id, err)}
	}
	out := ProviderFacts{Known: known[id], Operators: map[string]string{}}
	ops, err := f.Registry.GetNodeOperatorsAndDcsOfNodeProvider(ctx, p)
	if err != nil {
		if !out.Known {
			// The registry answers Err for a provider it has no
			// operators of; governance already says it is gone.
			return out
		}
		return ProviderFacts{Err: err.Error()}
	}
	for _, o := range ops {
		out.Operators[principalText(o.NodeOperator.NodeOperatorPrincipalID)] = o.DataCenter.ID
	}
	return out
}

func (at registryAt) dataCenter(ctx context.Context, id string) DataCenterFacts {
	var rec nns.DataCenterRecordPB
	found, err := at.record(ctx, nns.DataCenterRecordKey(id), &rec)
	switch {
	case err != nil:
		return DataCenterFacts{Err: err.Error()}
	case !found:
		return DataCenterFacts{}
	}
	return DataCenterFacts{Found: true, Region: rec.Region}
}

func (at registryAt) operator(ctx context.Context, id string) OperatorFacts {
	var rec nns.NodeOperatorRecordPB
	found, err := at.record(ctx, nns.NodeOperatorRecordKey(id), &rec)
	switch {
	case err != nil:
		return OperatorFacts{Err: err.Error()}
	case !found:
		return OperatorFacts{}
	}
	return OperatorFacts{Found: true, Provider: principalText(rec.NodeProviderPrincipalID), DC: rec.DcID,
		NodeAllowance: rec.NodeAllowance, RewardableNodes: rec.RewardableNodes, IPv6: rec.IPv6}
}

func (at registryAt) node(ctx context.Context, id string) NodeFacts {
	var rec nns.NodeRecordPB
	found, err := at.record(ctx, nns.NodeRecordKey(id), &rec)
	switch {
	case err != nil:
		return NodeFacts{Err: err.Error()}
	case !found:
		return NodeFacts{}
	}
	out := NodeFacts{Found: true, Operator: principalText(rec.NodeOperatorID), Chip: rec.ChipID}
	if rec.HTTP != nil {
		out.IP, out.Port = rec.HTTP.IPAddr, rec.HTTP.Port
	}
	if rec.HostosVersionID != nil {
		out.HostOS = *rec.HostosVersionID
	}
	return out
}

// registryAt reads registry records at one version.
type registryAt struct {
	r       Registry
	version uint64
}

// has reports whether key holds a value at the version.
func (at registryAt) has(ctx context.Context, key string) (bool, error) {
	_, _, found, err := at.r.GetValue(ctx, key, at.version)
	return found, err
}

// record reads key at the version into rec; found is false when the key
// holds nothing.
func (at registryAt) record(ctx context.Context, key string, rec interface{ Unmarshal([]byte) error }) (bool, error) {
	raw, _, found, err := at.r.GetValue(ctx, key, at.version)
	if err != nil || !found {
		return false, err
	}
	if err := rec.Unmarshal(raw); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

// nodeList asks the dashboard for its list of every node, from the start
// of Fetch, beside the registry reads: which nodes it says are failing
// (their first read is short, and they are read first) and which it says
// answer (read once, never cut short); statusSays reads each status. list
// returns it once the registry reads are done, waiting at most ListWait
// more, so a slow dashboard costs a run no more than that; without the
// list (no such dashboard, an error, too slow) each node is handled alone.
// stop ends a read still in flight.
func (f *Fetcher) nodeList(ctx context.Context, res *config.Resources) (list func() map[string]source.DashboardNode, stop func()) {
	d, ok := f.Dashboard.(nodeListDashboard)
	if !ok || len(versionNodes(res)) == 0 {
		return func() map[string]source.DashboardNode { return nil }, func() {}
	}
	lctx, cancel := context.WithTimeout(ctx, f.timeout())
	got := make(chan map[string]source.DashboardNode, 1)
	go func() {
		l, err := d.Nodes(lctx)
		if err != nil {
			l = nil
		}
		got <- l
	}()
	return func() map[string]source.DashboardNode {
		wait := time.NewTimer(f.listWait())
		defer wait.Stop()
		select {
		case l := <-got:
			return l
		case <-wait.C:
			cancel()
			return nil
		}
	}, cancel
}

// DefaultListWait bounds how long the node status reads wait for the
// dashboard's list once the registry reads are done: the list of a
// mainnet-sized fleet is about a megabyte from a third party, and without
// it every node gets the short first attempt, which a far node (three
// round trips before it answers) can miss. A dashboard slower than this
// costs a run this much, what one dead node cost before the first attempt.
const DefaultListWait = 2 * time.Second

func (f *Fetcher) listWait() time.Duration {
	if f.ListWait > 0 {
		return f.ListWait
	}
	return DefaultListWait
}

func (f *Fetcher) firstAttempt() time.Duration {
	if f.FirstAttempt > 0 {
		return f.FirstAttempt
	}
	return DefaultFirstAttempt
}

// versionNodes lists the nodes whose running version reconcile reads.
func versionNodes(res *config.Resources) []*config.Node {
	var out []*config.Node
	for _, n := range res.Nodes {
		if !n.Decommissioned && n.Version != "" {
			out = append(out, n)
		}
	}
	return out
}

// dashboardSays is what a status the dashboard gives a node tells its
// status read. The statuses are the dashboard's four (docs/decisions.md,
// "The dashboard's statuses"); every other value, and none, says nothing.
type dashboardSays int

const (
	// saysNothing: no status, or one alp does not know (UNRECOGNIZED). The
	// node is read as one the dashboard does not list: a short first
	// attempt, then the whole connect timeout.
	saysNothing dashboardSays = iota
	// saysAnswers: UP (healthy, in a subnet) and UNASSIGNED (a healthy
	// spare). The node is read once with the whole connect timeout, never
	// cut short: under load a live node's handshake can outlast the first
	// attempt.
	saysAnswers
	// saysFailing: DOWN (failed) and DEGRADED (falling behind the chain,
	// on its way back or to failing). The node gets a short first attempt,
	// is read before the others, and when it does not answer in time the
	// dashboard's version is the answer, with the status as the reason.
	saysFailing
)

func statusSays(status string) dashboardSays {
	switch status {
	case "UP", "UNASSIGNED":
		return saysAnswers
	case "DOWN", "DEGRADED":
		return saysFailing
	}
	return saysNothing
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// versionIDs lists every version whose election reconcile reports: the
// declared guestos_version blocks and any version a node names by hash.
func versionIDs(res *config.Resources) []string {
	var declared []string
	for _, v := range res.GuestOSVersions {
		declared = append(declared, v.ID)
	}
	return withNodes(declared, res, func(n *config.Node) string { return n.Version })
}

// withNodes is declared, then what each node not decommissioned is
// expected to run (of), each id once.
func withNodes(declared []string, res *config.Resources, of func(*config.Node) string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range declared {
		add(id)
	}
	for _, n := range res.Nodes {
		if !n.Decommissioned {
			add(of(n))
		}
	}
	return out
}

// hostOSIDs lists every HostOS version whose election reconcile reports:
// the declared ones and the ones declared nodes are expected to run.
func hostOSIDs(res *config.Resources) []string {
	var declared []string
	for _, v := range res.HostOSVersions {
		declared = append(declared, v.ID)
	}
	return withNodes(declared, res, func(n *config.Node) string { return n.HostOS })
}

// version asks the node itself, then the dashboard. listed is what the
// dashboard's list says of the node (nil: it was not listed, or there is
// no list). A node listed as answering (statusSays) is read once with the
// whole connect timeout. Otherwise the first read is short
// (FirstAttempt): a node that does not answer in time is asked again with
// the whole connect timeout unless the dashboard says it is failing, in
// which case the dashboard's version is the answer, as it would be after
// the long wait failed. A node that refuses at once goes straight to the
// dashboard, as before. A version from the dashboard carries the status
// the dashboard gave the node. The listed record answers for the dashboard
// only when it has a version; otherwise the node's own dashboard record is
// asked, once, as it is for a node the list does not name.
func (f *Fetcher) version(ctx context.Context, id string, nf NodeFacts, listed *source.DashboardNode) VersionFacts {
	var reasons []string
	var (
		asked bool
		dash  source.DashboardNode
		found bool
		derr  error
	)
	askDashboard := func() (source.DashboardNode, bool, error) {
		switch {
		case asked:
		case listed != nil && listed.GuestOSVersion != "":
			dash, found = *listed, true
		default:
			dash, found, derr = f.dashboardNode(ctx, id)
			if listed != nil && dash.Status == "" {
				dash.Status = listed.Status
			}
		}
		asked = true
		return dash, found, derr
	}
	switch {
	case f.NodeStatus == nil:
		reasons = append(reasons, "node: no status client")
	case !nf.Found:
		reasons = append(reasons, "node: no registry record to find its address")
	default:
		first := f.firstAttempt()
		// A node the list says answers is not cut short: it would only
		// be asked again, and under CPU load a live node's handshake can
		// outlast the first attempt.
		fctx, cancel := ctx, context.CancelFunc(func() {})
		if listed == nil || statusSays(listed.Status) != saysAnswers {
			fctx, cancel = context.WithTimeout(ctx, first)
		}
		v, err := f.NodeStatus.Version(fctx, nf.IP, nf.Port)
		slow := err != nil && fctx != ctx && fctx.Err() != nil && ctx.Err() == nil
		cancel()
		if slow && f.Dashboard != nil {
			if n, found, derr := askDashboard(); derr == nil && found && statusSays(n.Status) == saysFailing && n.GuestOSVersion != "" {
				return fromDashboard(n, fmt.Sprintf("node: no answer within %s, and the dashboard says it is %s", first, n.Status))
			}
		}
		if slow {
			v, err = f.NodeStatus.Version(ctx, nf.IP, nf.Port)
		}
		if err == nil {
			c, says := f.NodeStatus.(certificateChecker)
			return VersionFacts{Version: v, Source: FromNode, TLSUnverified: says && !c.ChecksCertificates()}
		}
		reasons = append(reasons, "node: "+err.Error())
	}
	if f.Dashboard != nil {
		n, found, err := askDashboard()
		switch {
		case err != nil:
			reasons = append(reasons, "dashboard: "+err.Error())
		case !found || n.GuestOSVersion == "":
			reasons = append(reasons, "dashboard: no version for the node")
		default:
			return fromDashboard(n, strings.Join(reasons, "; "))
		}
	}
	return VersionFacts{Err: strings.Join(reasons, "; ")}
}

// dashboardNode asks the dashboard for its record of one node: the whole
// record where it can give it, else the version alone.
func (f *Fetcher) dashboardNode(ctx context.Context, id string) (source.DashboardNode, bool, error) {
	if d, ok := f.Dashboard.(nodeStatusDashboard); ok {
		return d.Node(ctx, id)
	}
	v, found, err := f.Dashboard.NodeVersion(ctx, id)
	return source.DashboardNode{GuestOSVersion: v}, found, err
}

// fromDashboard is the version the dashboard gives n, with its status and
// why the node's own word is not the answer.
func fromDashboard(n source.DashboardNode, why string) VersionFacts {
	return VersionFacts{Version: n.GuestOSVersion, Source: FromDashboard, DashboardStatus: n.Status, Err: why}
}

func principalText(b []byte) string {
	p, err := principal.FromBytes(b)
	if err != nil {
		return hex.EncodeToString(b)
	}
	return p.String()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (f *Fetcher) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return 30 * time.Second
}

// group runs reads with at most Parallel in flight, each under the
// per-read timeout.
type group struct {
	ctx     context.Context
	timeout time.Duration
	sem     chan struct{}
	wg      sync.WaitGroup
}

func (f *Fetcher) group(ctx context.Context) *group {
	n := f.Parallel
	if n <= 0 {
		n = 8
	}
	return &group{ctx: ctx, timeout: f.timeout(), sem: make(chan struct{}, n)}
}

// DefaultVersionParallel and MaxVersionParallel bound the node status reads
// in flight: by default, and at most whatever is asked. A read waits on
// the network far longer than it computes, so with 1,500 nodes 64 at a
// time was 24 waves of round trips; 256 is 6 (docs/bench.md).
const (
	DefaultVersionParallel = 256
	MaxVersionParallel     = 512
)

func (f *Fetcher) versionGroup(ctx context.Context) *group {
	n := f.VersionParallel
	if n <= 0 {
		n = DefaultVersionParallel
	}
	n = min(n, MaxVersionParallel)
	return &group{ctx: ctx, timeout: f.timeout(), sem: make(chan struct{}, n)}
}

func (g *group) run(fn func(context.Context)) {
	g.wg.Add(1)
	g.sem <- struct{}{}
	go func() {
		defer g.wg.Done()
		defer func() { <-g.sem }()
		ctx, cancel := context.WithTimeout(g.ctx, g.timeout)
		defer cancel()
		fn(ctx)
	}()
}

func (g *group) wait() { g.wg.Wait() }
