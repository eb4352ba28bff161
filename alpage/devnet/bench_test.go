package devnet

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// benchmarkFanOut reads every default-fleet node's explorer record with at
// most width requests in flight, against a devnet answering after 50ms:
// what reconcile's bounded fan-out costs at a realistic round trip.
func benchmarkFanOut(b *testing.B, width int) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		b.Fatal(err)
	}
	d, err := Start(context.Background(), Options{Fleet: f, Dir: b.TempDir(), Latency: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	c := &http.Client{Timeout: 10 * time.Second}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem := make(chan struct{}, width)
		var wg sync.WaitGroup
		for _, n := range f.Nodes {
			wg.Add(1)
			sem <- struct{}{}
			go func(id string) {
				defer wg.Done()
				defer func() { <-sem }()
				resp, err := c.Get(d.ExplorerURL + "/api/records/nodes/" + id)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
			}(n.ID)
		}
		wg.Wait()
	}
}

func BenchmarkExplorerFanOut12NodesAt50msSequential(b *testing.B) { benchmarkFanOut(b, 1) }
func BenchmarkExplorerFanOut12NodesAt50msWidth8(b *testing.B)     { benchmarkFanOut(b, 8) }
