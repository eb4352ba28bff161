package generate

import (
	"fmt"
	"slices"
)

// Drop removes the proposals named in refused (name → why) and every
// proposal that waits on one removed, and says so in a note each: a
// proposal preflight refuses is never written, nor what depends on it.
func Drop(ps []*Proposal, refused map[string]string) (kept []*Proposal, notes []string) {
	gone := map[string]bool{}
	for _, p := range ps {
		if why, ok := refused[p.Name]; ok {
			gone[p.Name] = true
			notes = append(notes, fmt.Sprintf("%s is not generated: preflight refuses it (%s)", p.Name, why))
			continue
		}
		if i := slices.IndexFunc(p.After, func(n string) bool { return gone[n] }); i >= 0 {
			gone[p.Name] = true
			notes = append(notes, fmt.Sprintf("%s is not generated: it waits on %s, which is not", p.Name, p.After[i]))
			continue
		}
		kept = append(kept, p)
	}
	return kept, notes
}
