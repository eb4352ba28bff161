package layer

import (
	"fmt"
	"strings"
	"sync"
)

// Pull is how the pull of an image layer goes, as the cache's Images
// tells it while it runs.
type Pull struct {
	Reference string
	// Phase is "manifest", "layers" or "pack".
	Phase string
	// Fetched is the compressed bytes received of FetchTotal (the image's
	// layer blobs); Unpacked the uncompressed bytes applied so far.
	Fetched, FetchTotal, Unpacked int64
	// Layer is the image's layer being applied (1-based) of Layers.
	Layer, Layers int
}

// Sentence says how the pull goes, for a report.
func (p Pull) Sentence() string {
	what := "pulling image " + shortReference(p.Reference)
	switch p.Phase {
	case "layers":
		s := fmt.Sprintf("%s: %s of %s fetched, %s unpacked", what, bytesText(p.Fetched), bytesText(p.FetchTotal), bytesText(p.Unpacked))
		if p.Layer > 0 {
			s += fmt.Sprintf(" (image layer %d of %d)", p.Layer, p.Layers)
		}
		return s
	case "pack":
		return fmt.Sprintf("%s: packing its %s unpacked into one read-only filesystem", what, bytesText(p.Unpacked))
	}
	return what + ": reading its manifest"
}

// bytesText is n as a person reads a size: bytes, KiB or MiB.
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// shortReference is an image reference with its digest shortened as a
// filesystem layer's is.
func shortReference(ref string) string {
	if at := strings.LastIndex(ref, "@sha256:"); at >= 0 {
		return ref[:at] + "@sha256:" + short(ref[at+len("@sha256:"):])
	}
	return ref
}

// pulls are the image pulls under way, by reference.
type pulls struct {
	mu sync.Mutex
	m  map[string]Pull
}

func (p *pulls) set(ref string, pr Pull) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]Pull{}
	}
	pr.Reference = ref
	p.m[ref] = pr
}

func (p *pulls) done(ref string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, ref)
}

// Pulling is how the pull of the image reference names goes, while one
// runs for a layer this cache prepares.
func (c *Cache) Pulling(reference string) (Pull, bool) {
	c.pulls.mu.Lock()
	defer c.pulls.mu.Unlock()
	p, ok := c.pulls.m[reference]
	return p, ok
}
