package daemon

import (
	"time"

	"alpnib.dev/nibrunner/layer"
)

// LayerPruner is what a Layers may also do: remove the cached layers no
// spec in keep needs, and say how much the cache holds (*layer.Cache).
type LayerPruner interface {
	Prune(keep []layer.Spec) (int64, error)
	Bytes() (int64, error)
}

// pruneEvery is how often the layer cache is looked at.
const pruneEvery = time.Minute

// layerUses is when each layer was last referenced by a document, and
// when the layer cache was last pruned. Guarded by Daemon.mu.
type layerUses struct {
	seen      map[string]layerUse
	lastPrune time.Time
}

// layerUse is when a document last referenced a layer.
type layerUse struct {
	spec layer.Spec
	at   time.Time
}

// noteLayers records that the accepted document references its layers now
// (mu held).
func (d *Daemon) noteLayers(now time.Time) {
	if d.acc.doc == nil {
		return
	}
	if d.layers.seen == nil {
		d.layers.seen = map[string]layerUse{}
	}
	for i := range d.acc.doc.Instances {
		for _, s := range layerSpecs(&d.acc.doc.Instances[i]) {
			d.layers.seen[string(s.Kind)+"\x00"+s.Digest+"\x00"+s.DestinationPath+"\x00"+s.Reference] = layerUse{spec: s, at: now}
		}
	}
}

// pruneLayers removes from the layer cache what no document has referenced
// for cfg.LayerGrace, at most every pruneEvery; over cfg.LayerCacheBytes it
// removes at once whatever no document references now. It runs in the pass,
// outside the lock: the cache locks each entry against a start preparing it.
func (d *Daemon) pruneLayers(now time.Time) {
	p, ok := d.deps.Layers.(LayerPruner)
	if !ok {
		return
	}
	d.mu.Lock()
	if d.acc.doc == nil || now.Sub(d.layers.lastPrune) < pruneEvery {
		d.mu.Unlock()
		return
	}
	d.layers.lastPrune = now
	grace := d.cfg.LayerGrace
	if budget := d.cfg.LayerCacheBytes; budget > 0 {
		d.mu.Unlock()
		used, err := p.Bytes()
		d.mu.Lock()
		if err == nil && used > budget {
			grace = 0 // over budget: only what is referenced now stays
		}
	}
	var keep []layer.Spec
	for key, u := range d.layers.seen {
		if now.Sub(u.at) <= grace {
			keep = append(keep, u.spec)
		} else {
			delete(d.layers.seen, key)
		}
	}
	d.mu.Unlock()
	freed, err := p.Prune(keep)
	switch {
	case err != nil:
		d.cfg.Logf("nibrunnerd: prune the layer cache: %v", err)
	case freed > 0:
		d.cfg.Logf("nibrunnerd: pruned %d bytes of layers no document has named for %s", freed, grace)
	}
}
