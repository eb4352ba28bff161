// Package memtest measures what code allocates, for the tests that hold the
// ic decoders to a memory bound whatever sizes a hostile input declares.
package memtest

import "runtime"

// Allocated returns the bytes the heap handed out while f ran (including
// memory f freed again), after a collection so that earlier garbage does not
// count. Other goroutines' allocations count too: call it from tests that do
// not run in parallel.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
