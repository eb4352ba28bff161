package candid

import (
	"encoding/hex"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestLEB128KnownAnswers(t *testing.T) {
	for _, c := range []struct {
		n    int64
		uleb string
		sleb string
	}{
		{0, "00", "00"},
		{127, "7f", "ff00"},
		{128, "8001", "8001"},
		{624485, "e58e26", "e58e26"},
		{-1, "", "7f"},
		{-64, "", "40"},
		{-65, "", "bf7f"},
		{-123456, "", "c0bb78"},
	} {
		if c.uleb != "" {
			if got := hex.EncodeToString(appendLEB(nil, uint64(c.n))); got != c.uleb {
				t.Errorf("LEB128(%d) = %s, want %s", c.n, got, c.uleb)
			}
		}
		if got := hex.EncodeToString(appendSLEB(nil, c.n)); got != c.sleb {
			t.Errorf("SLEB128(%d) = %s, want %s", c.n, got, c.sleb)
		}
	}
}

func TestBigNumbersRoundTripThroughLEB128(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		n := randomBig(rng)
		r := &reader{data: appendBigLEB(nil, n)}
		got, err := r.nat()
		if err != nil || got.Cmp(n) != 0 || r.remaining() != 0 {
			t.Fatalf("nat %s came back as %v, %v", n, got, err)
		}
		neg := new(big.Int).Neg(n)
		for _, z := range []*big.Int{n, neg} {
			r := &reader{data: appendBigSLEB(nil, z)}
			got, err := r.int()
			if err != nil || got.Cmp(z) != 0 || r.remaining() != 0 {
				t.Fatalf("int %s came back as %v, %v (bytes %x)", z, got, err, appendBigSLEB(nil, z))
			}
		}
	}
}

func randomBig(rng *rand.Rand) *big.Int {
	n := new(big.Int)
	for words := rng.IntN(6); words >= 0; words-- {
		n.Lsh(n, 64)
		n.Or(n, new(big.Int).SetUint64(rng.Uint64()>>rng.IntN(64)))
	}
	return n
}

func TestMarshalAndUnmarshalAreSafeForConcurrentUse(t *testing.T) {
	data := workload(t, "proposal_info.hex")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				var info proposalInfo
				if err := Unmarshal(data, &info); err != nil {
					t.Error(err)
					return
				}
				if _, err := Marshal(info, sampleEverything()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
