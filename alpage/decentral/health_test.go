package decentral

import "testing"

// More than two thirds must be healthy: 9 of 13, 5 of 7, 27 of 40, 3 of 4.
func TestASubnetMakesProgressWithMoreThanTwoThirdsHealthy(t *testing.T) {
	for _, tc := range []struct{ size, least int }{{1, 1}, {4, 3}, {7, 5}, {13, 9}, {14, 10}, {28, 19}, {34, 23}, {40, 27}, {43, 29}} {
		if !MakesProgress(tc.least, tc.size) || MakesProgress(tc.least-1, tc.size) {
			t.Errorf("a subnet of %d: %d healthy should be the least that makes progress", tc.size, tc.least)
		}
		if 3*tc.least <= 2*tc.size || 3*(tc.least-1) > 2*tc.size {
			t.Errorf("a subnet of %d: %d is not the least above two thirds", tc.size, tc.least)
		}
	}
	if MakesProgress(0, 0) || MakesProgress(5, 4) {
		t.Error("an empty subnet, or more healthy members than members, makes no progress")
	}
	if FaultsTolerated(13) != 4 || FaultsTolerated(0) != 0 {
		t.Errorf("FaultsTolerated(13) = %d, (0) = %d", FaultsTolerated(13), FaultsTolerated(0))
	}
}
