package metrics

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"alpnib.dev/nibrunner/store"
)

// StoreStats is what an S3 store counts of its stream uploads
// (*store.S3 is one).
type StoreStats interface {
	Stats() store.S3Stats
}

// stores is a collector of the counts of the stores added with AddStore,
// read from each store at every scrape, so nothing else counts twice.
type stores struct {
	retries, giveUps *prometheus.Desc

	mu     sync.Mutex
	byName map[string]StoreStats
}

func newStores() *stores {
	return &stores{
		retries: prometheus.NewDesc("nibrunner_store_retries_total",
			"Requests of a checkpoint's or export's upload (a part, a single PUT, the complete call) an S3 store sent again after a transient failure, by store: checkpoints, exports.",
			[]string{"store"}, nil),
		giveUps: prometheus.NewDesc("nibrunner_store_giveups_total",
			"Requests of a checkpoint's or export's upload that failed on every attempt, so the upload was aborted and left to its job's backoff, by store: checkpoints, exports.",
			[]string{"store"}, nil),
		byName: map[string]StoreStats{},
	}
}

// Describe implements prometheus.Collector.
func (s *stores) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.retries
	ch <- s.giveUps
}

// Collect implements prometheus.Collector.
func (s *stores) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	byName := maps.Clone(s.byName)
	s.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		st := byName[name].Stats()
		ch <- prometheus.MustNewConstMetric(s.retries, prometheus.CounterValue, float64(st.Retries), name)
		ch <- prometheus.MustNewConstMetric(s.giveUps, prometheus.CounterValue, float64(st.GaveUp), name)
	}
}

// AddStore shows the counts of the store named name (checkpoints,
// exports) as nibrunner_store_retries_total and
// nibrunner_store_giveups_total{store=name}, read from it at each scrape.
// A name added again replaces the store it had.
func (m *Metrics) AddStore(name string, s StoreStats) {
	m.stores.mu.Lock()
	defer m.stores.mu.Unlock()
	m.stores.byName[name] = s
}
