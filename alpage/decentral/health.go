package decentral

// FaultsTolerated is the most members of a subnet of size nodes that can be
// faulty (down, degraded or malicious) with the subnet still making
// progress: (size-1)/3, dfinity/ic's get_faults_tolerated.
func FaultsTolerated(size int) int {
	return (max(size, 1) - 1) / 3
}

// MakesProgress says a subnet of size members, healthy of them healthy, makes
// progress at every height: consensus samples a notarization committee of
// 3f+1 members that needs all but f of them, so it must never meet more than
// f unhealthy ones. That is more than two thirds healthy. An empty subnet
// makes none.
func MakesProgress(healthy, size int) bool {
	return size > 0 && healthy <= size && size-healthy <= FaultsTolerated(size)
}
