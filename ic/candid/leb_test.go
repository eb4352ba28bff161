package candid

import (
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"

	"alpnib.dev/ic/internal/leb128"
)

func TestBigNumbersRoundTripThroughLEB128(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		n := randomBig(rng)
		r := &reader{data: leb128.AppendUnsignedBig(nil, n)}
		got, err := r.nat()
		if err != nil || got.Cmp(n) != 0 || r.remaining() != 0 {
			t.Fatalf("nat %s came back as %v, %v", n, got, err)
		}
		neg := new(big.Int).Neg(n)
		for _, z := range []*big.Int{n, neg} {
			r := &reader{data: leb128.AppendSignedBig(nil, z)}
			got, err := r.int()
			if err != nil || got.Cmp(z) != 0 || r.remaining() != 0 {
				t.Fatalf("int %s came back as %v, %v (bytes %x)", z, got, err, leb128.AppendSignedBig(nil, z))
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
