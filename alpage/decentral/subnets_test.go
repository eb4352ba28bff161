package decentral

import "testing"

// Hand-computed: a third of 40 is 13, so 14 nodes are needed; DFINITY's 3
// plus 11 single actors make 12. A country of 3 nodes: ceil(14/3) = 5.
func TestTheSubnetsDreHoldsToLimitsOfTheirOwnGetTheMinimumsThoseLimitsGuarantee(t *testing.T) {
	other := "qdvhd-os4o2-zzrdw-xrcv4-gljou-eztdp-bj326-e6jgr-tkhuc-ql6v2-yqe"
	for _, c := range []struct {
		id   string
		size int
		want Coefficients
	}{
		{other, 13, Coefficients{5, 5, 5, 3}},
		{other, 34, Coefficients{12, 12, 12, 4}},
		{NNSSubnet, 40, Coefficients{12, 12, 12, 5}},
		{NNSSubnet, 13, Coefficients{3, 3, 3, 2}},
		{SNSSubnet, 34, Coefficients{12, 12, 12, 4}},
		{SNSSubnet, 13, Coefficients{5, 5, 5, 2}},
		{IISubnet, 34, Coefficients{12, 12, 12, 4}},
		{FiduciarySubnet, 13, Coefficients{5, 5, 5, 2}},
		{EuropeanSubnet, 13, Coefficients{5, 5, 5, 1}},
	} {
		if got := DefaultMinimumsFor(c.id, c.size); got != c.want {
			t.Errorf("DefaultMinimumsFor(%s %q, %d) = %v, want %v", c.id[:5], SubnetRole(c.id), c.size, got, c.want)
		}
	}
}
