//go:build race

package proxy

// raceSlowdown is how much slower the race detector makes a CPU-bound
// loop (Go's documentation says 2-20x): time limits in tests scale by it.
const raceSlowdown = 20
