package decentral

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

// fleet is a synthetic IC: about 1,400 nodes of 130 providers in 100 data
// centers of 70 owners in 30 countries, a few countries and providers far
// larger than the rest (as on mainnet), and 39 subnets built within the
// target topology's limits (one node per provider, data center and owner,
// two per country, three from 28 nodes).
type fleet struct {
	nodes   []Node
	subnets [][]Node // members, largest subnets first
	pool    []Node   // assigned to no subnet
}

func synthFleet(seed uint64) *fleet {
	rng := rand.New(rand.NewPCG(seed, 37))
	const (
		countries = 30
		dcs       = 100
		owners    = 70
		providers = 130
		nodes     = 1400
	)
	// Country i has weight 1/(i+1): the first few hold most data centers.
	zipf := func(n int) int {
		total := 0.0
		for i := range n {
			total += 1 / float64(i+1)
		}
		x := rng.Float64() * total
		for i := range n {
			x -= 1 / float64(i+1)
			if x <= 0 {
				return i
			}
		}
		return n - 1
	}
	type dc struct{ name, owner, country string }
	dcList := make([]dc, dcs)
	for i := range dcList {
		owner := i // most owners run one data center, a few run several
		if i >= owners {
			owner = rng.IntN(owners / 4)
		}
		dcList[i] = dc{fmt.Sprintf("dc%03d", i), fmt.Sprintf("owner%02d", owner), fmt.Sprintf("C%02d", zipf(countries))}
	}
	f := &fleet{}
	// Provider sizes: a power law scaled to the fleet, each in one to three
	// data centers.
	weights := make([]float64, providers)
	sum := 0.0
	for i := range weights {
		weights[i] = 1 / math.Sqrt(float64(i+1))
		sum += weights[i]
	}
	for p := range providers {
		n := max(1, int(math.Round(weights[p]/sum*nodes)))
		homes := make([]dc, 1+rng.IntN(3))
		for i := range homes {
			homes[i] = dcList[rng.IntN(dcs)]
		}
		for i := range n {
			d := homes[i%len(homes)]
			f.nodes = append(f.nodes, Node{ID: fmt.Sprintf("node-%03d-%02d", p, i), Provider: fmt.Sprintf("np%03d", p),
				DataCenter: d.name, DataCenterOwner: d.owner, Country: d.country})
		}
	}
	rng.Shuffle(len(f.nodes), func(i, j int) { f.nodes[i], f.nodes[j] = f.nodes[j], f.nodes[i] })

	sizes := []int{40, 34, 34, 34, 28, 28}
	for range 33 {
		sizes = append(sizes, 13)
	}
	used := map[string]bool{}
	for _, size := range sizes {
		countryLimit := countryLimitSmall
		if size >= largeSubnet {
			countryLimit = countryLimitLarge
		}
		var members []Node
		seen := map[string]int{}
		for _, n := range f.nodes {
			if len(members) == size {
				break
			}
			if used[n.ID] || seen["p"+n.Provider] > 0 || seen["d"+n.DataCenter] > 0 || seen["o"+n.DataCenterOwner] > 0 || seen["c"+n.Country] >= countryLimit {
				continue
			}
			for _, k := range []string{"p" + n.Provider, "d" + n.DataCenter, "o" + n.DataCenterOwner, "c" + n.Country} {
				seen[k]++
			}
			members = append(members, n)
			used[n.ID] = true
		}
		f.subnets = append(f.subnets, members)
	}
	for _, n := range f.nodes {
		if !used[n.ID] {
			f.pool = append(f.pool, n)
		}
	}
	return f
}

// tenRequests asks, for ten subnets (the largest six and four of 13 nodes),
// to replace two members each that the dashboard would call DOWN, from the
// unassigned nodes less one in twenty that is DOWN too.
func (f *fleet) tenRequests() []Request {
	rng := rand.New(rand.NewPCG(7, 7))
	var pool []Node
	for _, n := range f.pool {
		if rng.IntN(20) != 0 {
			pool = append(pool, n)
		}
	}
	var reqs []Request
	for _, i := range []int{0, 1, 2, 3, 4, 5, 10, 20, 30, 38} {
		members := f.subnets[i]
		a, b := rng.IntN(len(members)), rng.IntN(len(members)-1)
		if b >= a {
			b++
		}
		reqs = append(reqs, Request{Members: members, Replace: []string{members[a].ID, members[b].ID},
			Candidates: pool, Minimum: DefaultMinimums(len(members))})
	}
	return reqs
}

// On a fleet shaped like mainnet, two DOWN members of each of ten subnets are
// replaced without lowering any coefficient, every subnet keeps its default
// minimums, and no node is chosen twice.
func TestTenSubnetsOnAFleetOf1400NodesKeepEveryCoefficient(t *testing.T) {
	f := synthFleet(1)
	if n := len(f.nodes); n < 1350 || n > 1450 {
		t.Fatalf("the fleet has %d nodes", n)
	}
	for i, s := range f.subnets {
		if c := Compute(s); len(c.Below(DefaultMinimums(len(s)))) > 0 {
			t.Fatalf("subnet %d of %d nodes is built below its minimums: %v", i, len(s), c)
		}
	}
	results, err := ReplaceInTurn(f.tenRequests())
	if err != nil {
		t.Fatal(err)
	}
	chosen := map[string]bool{}
	for i, r := range results {
		if r.Infeasible != nil {
			t.Fatalf("subnet %d: %s", i, r.Infeasible)
		}
		for _, a := range Attributes {
			if r.After[a] < r.Before[a] {
				t.Errorf("subnet %d: %s lowered %d → %d", i, a, r.Before[a], r.After[a])
			}
		}
		for _, c := range r.Choices {
			if chosen[c.Chosen.ID] {
				t.Errorf("node %s chosen twice", c.Chosen.ID)
			}
			chosen[c.Chosen.ID] = true
		}
		if len(r.Choices) != 2 {
			t.Errorf("subnet %d: %d choices", i, len(r.Choices))
		}
	}
	if testing.Verbose() {
		for _, r := range results[:2] {
			for _, c := range r.Choices {
				t.Log(c.Reason(r.Minimum))
			}
		}
	}
}

// The spread of the synthetic fleet, for docs/bench.md.
func TestSyntheticFleetSpread(t *testing.T) {
	f := synthFleet(1)
	if !testing.Verbose() {
		t.Skip("prints the spread with -v")
	}
	for _, a := range Attributes {
		as := Actors(f.nodes, a)
		top := as[:min(3, len(as))]
		t.Logf("%s: %d actors, largest %v", a, len(as), top)
	}
	t.Logf("%d nodes, %d subnets, %d unassigned", len(f.nodes), len(f.subnets), len(f.pool))
	if len(slices.Concat(f.subnets...))+len(f.pool) != len(f.nodes) {
		t.Error("the subnets and the pool do not partition the fleet")
	}
}

// BenchmarkReplaceTenSubnets chooses replacements for two members of each of
// ten subnets at once, on the synthetic fleet of about 1,400 nodes. Besides
// the wall time it reports the process's CPU time per run (cpu-ms/op), which
// a machine shared with other builds inflates far less.
func BenchmarkReplaceTenSubnets(b *testing.B) {
	reqs := synthFleet(1).tenRequests()
	start := cpuTime(b)
	for b.Loop() {
		if _, err := ReplaceInTurn(reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the user and system time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompute is the four coefficients of a 13-node subnet.
func BenchmarkCompute(b *testing.B) {
	s := synthFleet(1).subnets[10]
	for b.Loop() {
		Compute(s)
	}
}
