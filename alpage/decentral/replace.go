package decentral

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Request asks for replacements of some of a subnet's members.
type Request struct {
	// Members are the subnet's members now.
	Members []Node
	// Replace are the ids of the members to replace (unhealthy, or marked).
	Replace []string
	// Candidates are the nodes a replacement may be chosen from: the caller
	// keeps to healthy nodes assigned to no subnet.
	Candidates []Node
	// Minimum is the subnet's minimum coefficient per attribute (0: none).
	Minimum Coefficients
}

// Choice is one replacement: Chosen takes Replaced's place. Before and After
// are the subnet's coefficients just before and after this swap, the earlier
// choices already made; together the choices narrate one membership change,
// and only its end (Result.After) is held to the minimum.
type Choice struct {
	Replaced string
	Chosen   Node
	Before   Coefficients
	After    Coefficients
	// Candidates is how many candidates were weighed for this place.
	Candidates int
	// RunnerUp is the next best candidate ("" when there was no other), and
	// Margin what put Chosen ahead of it, in words.
	RunnerUp string
	Margin   string
}

// Reason says why Chosen was chosen, with the coefficients before and after,
// against the minimum, as a proposal's reviewers would read it.
func (c Choice) Reason(minimum Coefficients) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s replaces %s: %s", c.Chosen.ID, c.Replaced, sideBySide(c.Before, c.After, minimum))
	if c.RunnerUp == "" {
		fmt.Fprintf(&b, "; the only candidate")
	} else {
		fmt.Fprintf(&b, "; best of %d candidates, ahead of %s by %s", c.Candidates, c.RunnerUp, c.Margin)
	}
	return b.String()
}

// Result is the replacements chosen for a subnet, or why there are none.
type Result struct {
	// Before is the subnet's coefficients now; After once every choice is
	// made (equal to Before when Infeasible is set).
	Before, After Coefficients
	Minimum       Coefficients
	// Choices are in the order of the replaced ids, sorted; nil when
	// Infeasible is set.
	Choices []Choice
	// Infeasible is set when no choice this chooser finds keeps every
	// minimum; the caller then proposes nothing and notes it.
	Infeasible *Infeasible
}

// Infeasible says why no replacement keeps the subnet's minimums.
type Infeasible struct {
	// Need and Available are the replacements needed and the candidates
	// offered, when there are too few candidates (Available < Need).
	Need, Available int
	// Reached is the coefficients of the best replacement found, and Unmet
	// the attributes below their minimum there.
	Reached Coefficients
	Unmet   []Unmet
}

// Unmet is an attribute whose minimum the replacement cannot meet.
type Unmet struct {
	Attribute Attribute
	Minimum   int
	// Reached is its coefficient in the best replacement found; Bound the
	// highest any choice from the candidates gives it, heeding nothing else.
	Reached, Bound int
}

// Impossible says no choice from the candidates reaches the minimum, not
// even one made for this attribute alone.
func (u Unmet) Impossible() bool { return u.Bound < u.Minimum }

// String is the note a plan writes in place of a proposal.
func (f *Infeasible) String() string {
	if f.Available < f.Need {
		return fmt.Sprintf("%d replacements are needed but only %d healthy unassigned candidates are offered", f.Need, f.Available)
	}
	parts := make([]string, 0, len(f.Unmet))
	for _, u := range f.Unmet {
		s := fmt.Sprintf("%s cannot be kept at its minimum %d: the best replacement reaches %d", u.Attribute, u.Minimum, u.Reached)
		if u.Impossible() {
			s += fmt.Sprintf(", and no choice from these candidates reaches more than %d", u.Bound)
		} else {
			s += fmt.Sprintf(" (%d for %s alone, but not with the other minimums kept)", u.Bound, u.Attribute)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Replace chooses, for each member to replace, a candidate to take its place:
// one at a time, in the order of the replaced ids, the candidate that leaves
// the subnet best by these rules, each deciding only when the ones before it
// tie (dre's NakamotoScore ordering, adapted; see docs/decisions.md):
//
//  1. the least total shortfall below the minimums;
//  2. the highest product of the coefficients (dre: their mean log2);
//  3. the fewest nodes held by the dominant node providers, then countries;
//  4. the most distinct node providers, countries, data centers, then owners;
//  5. the highest coefficients, in attribute order;
//  6. the lowest node id, so two runs choose alike.
//
// When the subnet that results falls below a minimum, Result.Infeasible says
// which attribute. An error means the request itself is wrong: a replaced id
// that is not a member, a candidate that is a member, an id given twice.
func Replace(req Request) (Result, error) {
	members, err := indexNodes("member", req.Members)
	if err != nil {
		return Result{}, err
	}
	replace := slices.Clone(req.Replace)
	slices.Sort(replace)
	for i, id := range replace {
		if _, ok := members[id]; !ok {
			return Result{}, fmt.Errorf("node %s to replace is not a member of the subnet", id)
		}
		if i > 0 && replace[i-1] == id {
			return Result{}, fmt.Errorf("node %s to replace is listed twice", id)
		}
	}
	if _, err := indexNodes("candidate", req.Candidates); err != nil {
		return Result{}, err
	}
	for _, n := range req.Candidates {
		if _, ok := members[n.ID]; ok {
			return Result{}, fmt.Errorf("candidate %s is already a member of the subnet", n.ID)
		}
	}

	before := Compute(req.Members)
	res := Result{Before: before, After: before, Minimum: req.Minimum}
	if len(req.Candidates) < len(replace) {
		res.Infeasible = &Infeasible{Need: len(replace), Available: len(req.Candidates), Reached: before}
		return res, nil
	}

	w := newWeigher(req.Members, req.Candidates, req.Minimum)
	pool := make([]int, len(req.Candidates)) // indexes into w.cands, by id
	for i := range pool {
		pool[i] = i
	}
	slices.SortFunc(pool, func(x, y int) int { return strings.Compare(req.Candidates[x].ID, req.Candidates[y].ID) })

	choices := make([]Choice, 0, len(replace))
	for _, id := range replace {
		slot := members[id]
		was := w.score(slot, -1)
		best, runnerUp := -1, -1
		var bestScore, runnerScore score
		for pi, ci := range pool {
			s := w.score(slot, ci)
			switch {
			case best < 0 || better(s, bestScore) > 0:
				runnerUp, runnerScore = best, bestScore
				best, bestScore = pi, s
			case runnerUp < 0 || better(s, runnerScore) > 0:
				runnerUp, runnerScore = pi, s
			}
		}
		ci := pool[best]
		ch := Choice{Replaced: id, Chosen: req.Candidates[ci], Before: was.c, After: bestScore.c, Candidates: len(pool)}
		if runnerUp >= 0 {
			ch.RunnerUp = req.Candidates[pool[runnerUp]].ID
			ch.Margin = margin(bestScore, runnerScore)
			if ch.Margin == "" {
				ch.Margin = "the lower node id, all else equal"
			}
		}
		choices = append(choices, ch)
		w.place(slot, ci)
		pool = slices.Delete(pool, best, best+1)
	}

	after := w.score(-1, -1).c
	res.After = after
	if below := after.Below(req.Minimum); len(below) > 0 {
		f := &Infeasible{Need: len(replace), Available: len(req.Candidates), Reached: after}
		for _, a := range below {
			f.Unmet = append(f.Unmet, Unmet{Attribute: a, Minimum: req.Minimum[a], Reached: after[a],
				Bound: bound(req.Members, replace, req.Candidates, a)})
		}
		res.After, res.Infeasible = before, f
		return res, nil
	}
	res.Choices = choices
	return res, nil
}

// score is what the chooser weighs of a subnet.
type score struct {
	c        Coefficients
	deficit  int
	product  int
	held     [NumAttributes]int // nodes held by the actors that make up the coefficient
	distinct [NumAttributes]int
}

// better is > 0 when a is better than b, < 0 when worse.
func better(a, b score) int {
	r, _ := compareScores(a, b, false)
	return r
}

// margin is the rule that puts a ahead of b, in words ("" on a tie).
func margin(a, b score) string {
	_, s := compareScores(a, b, true)
	return s
}

// compareScores is > 0 when a is better than b, < 0 when worse, and, when
// say is set, the rule that decided in words.
func compareScores(a, b score, say bool) (int, string) {
	words := func(format string, args ...any) string {
		if !say {
			return ""
		}
		return fmt.Sprintf(format, args...)
	}
	if r := cmp.Compare(b.deficit, a.deficit); r != 0 {
		return r, words("a smaller total shortfall below the minimums (%d vs %d)", a.deficit, b.deficit)
	}
	if r := cmp.Compare(a.product, b.product); r != 0 {
		return r, words("a higher product of the coefficients (%d vs %d)", a.product, b.product)
	}
	for _, at := range [...]Attribute{NodeProvider, Country} {
		if r := cmp.Compare(b.held[at], a.held[at]); r != 0 {
			return r, words("fewer nodes held by the dominant %s actors (%d vs %d)", at, a.held[at], b.held[at])
		}
	}
	for _, at := range [...]Attribute{NodeProvider, Country, DataCenter, DataCenterOwner} {
		if r := cmp.Compare(a.distinct[at], b.distinct[at]); r != 0 {
			return r, words("more distinct %s actors (%d vs %d)", at, a.distinct[at], b.distinct[at])
		}
	}
	for _, at := range Attributes {
		if r := cmp.Compare(a.c[at], b.c[at]); r != 0 {
			return r, words("a higher %s coefficient (%d vs %d)", at, a.c[at], b.c[at])
		}
	}
	return 0, ""
}

// weigher scores a subnet with one member swapped for a candidate, over
// interned attribute values so that a score allocates nothing.
type weigher struct {
	minimum Coefficients
	members [][NumAttributes]int32
	cands   [][NumAttributes]int32
	counts  [NumAttributes][]int // scratch, all zero between scores
	touched []int32
	held    []int
}

func newWeigher(members, cands []Node, minimum Coefficients) *weigher {
	w := &weigher{minimum: minimum}
	var names [NumAttributes]map[string]int32
	for a := range names {
		names[a] = map[string]int32{}
	}
	intern := func(n Node) [NumAttributes]int32 {
		var v [NumAttributes]int32
		for _, a := range Attributes {
			id, ok := names[a][n.Value(a)]
			if !ok {
				id = int32(len(names[a]))
				names[a][n.Value(a)] = id
			}
			v[a] = id
		}
		return v
	}
	for _, n := range members {
		w.members = append(w.members, intern(n))
	}
	for _, n := range cands {
		w.cands = append(w.cands, intern(n))
	}
	for _, a := range Attributes {
		w.counts[a] = make([]int, len(names[a]))
	}
	return w
}

// place makes candidate ci the member in slot.
func (w *weigher) place(slot, ci int) { w.members[slot] = w.cands[ci] }

// score scores the members with slot's member replaced by candidate ci
// (slot < 0: no swap; ci < 0: the member stays).
func (w *weigher) score(slot, ci int) score {
	var s score
	s.product = 1
	for _, a := range Attributes {
		counts := w.counts[a]
		w.touched = w.touched[:0]
		for i, m := range w.members {
			v := m[a]
			if i == slot && ci >= 0 {
				v = w.cands[ci][a]
			}
			if counts[v] == 0 {
				w.touched = append(w.touched, v)
			}
			counts[v]++
		}
		w.held = w.held[:0]
		for _, v := range w.touched {
			w.held = append(w.held, counts[v])
			counts[v] = 0
		}
		s.distinct[a] = len(w.touched)
		s.c[a], s.held[a] = coefficientHeld(w.held)
		s.product *= s.c[a]
	}
	s.deficit = s.c.deficit(w.minimum)
	return s
}

// coefficientHeld is coefficientSorting and the nodes the actors it counts hold.
func coefficientHeld(counts []int) (int, int) {
	n := coefficientSorting(counts)
	held := 0
	for _, c := range counts[:n] {
		held += c
	}
	return n, held
}

// bound is the highest coefficient of attribute a that any choice of
// len(replace) candidates gives the subnet, heeding no other attribute: each
// new node goes to the actor holding the fewest nodes among those the
// candidates still offer, which leaves the largest actors as small as they
// can be.
func bound(members []Node, replace []string, cands []Node, a Attribute) int {
	leaving := map[string]bool{}
	for _, id := range replace {
		leaving[id] = true
	}
	counts := map[string]int{}
	for _, n := range members {
		if !leaving[n.ID] {
			counts[n.Value(a)]++
		}
	}
	offered := map[string]int{}
	for _, n := range cands {
		offered[n.Value(a)]++
	}
	names := make([]string, 0, len(offered))
	for v := range offered {
		names = append(names, v)
	}
	slices.Sort(names)
	for range replace {
		pick := ""
		for _, v := range names {
			if offered[v] > 0 && (pick == "" || counts[v] < counts[pick]) {
				pick = v
			}
		}
		counts[pick]++
		offered[pick]--
	}
	list := make([]int, 0, len(counts))
	for _, c := range counts {
		list = append(list, c)
	}
	return coefficientSorting(list)
}

// ReplaceInTurn runs Replace on each request in order, leaving out of each
// request's candidates the nodes the requests before it chose, so that two
// subnets planned together never take the same node. An error names the
// request (by its position) that is wrong.
func ReplaceInTurn(reqs []Request) ([]Result, error) {
	taken := map[string]bool{}
	out := make([]Result, 0, len(reqs))
	for i, req := range reqs {
		if len(taken) > 0 {
			req.Candidates = slices.DeleteFunc(slices.Clone(req.Candidates), func(n Node) bool { return taken[n.ID] })
		}
		res, err := Replace(req)
		if err != nil {
			return nil, fmt.Errorf("replacement request %d: %w", i+1, err)
		}
		for _, c := range res.Choices {
			taken[c.Chosen.ID] = true
		}
		out = append(out, res)
	}
	return out, nil
}
