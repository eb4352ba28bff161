package keylock

import (
	"sync"
	"testing"
)

func TestOneKeysHoldersTakeTurnsAndOtherKeysDoNotWait(t *testing.T) {
	var m Map
	unlockA := m.Lock("a")
	// Another key is taken while a is held.
	m.Lock("b")()
	// a's next holder gets in once the first lets go.
	got := make(chan struct{})
	go func() { m.Lock("a")(); close(got) }()
	unlockA()
	<-got
}

func TestAKeysLockIsForgottenOnceNobodyHoldsOrWaits(t *testing.T) {
	var m Map
	var wg sync.WaitGroup
	count := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.Lock("k")()
			count++ // the race detector fails this when two hold k at once
		}()
	}
	wg.Wait()
	if count != 50 || len(m.locks) != 0 {
		t.Fatalf("count %d, %d locks left", count, len(m.locks))
	}
}
