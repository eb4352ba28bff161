package decentral

// The mainnet subnets dre's business rules hold to limits of their own
// (check_business_rules_for_subnet_with_nodes, rs/decentralization/src/
// network/subnet.rs at dfinity/dre 4832ecca0c3f7e4254693691a73ca43c6107c866;
// docs/decisions.md). dre tells subnets apart by id, not by the registry's
// subnet type, so these are what a subnet's "type" means for its defaults.
const (
	NNSSubnet       = "tdb26-jop6k-aogll-7ltgs-eruif-6kk7m-qpktf-gdiqx-mxtrf-vb5e6-eqe"
	SNSSubnet       = "x33ed-h457x-bsgyx-oqxqf-6pzwv-wkhzr-rm2j3-npodi-purzm-n66cg-gae"
	IISubnet        = "uzr34-akd3s-xrdag-3ql62-ocgoh-ld2ao-tamcv-54e7j-krwgb-2gm4z-oqe"
	FiduciarySubnet = "pzp6e-ekpqk-3c5x7-2h6so-njoeq-mt45d-h3h6c-q3mxf-vpeq5-fk5o7-yae"
	EuropeanSubnet  = "bkfrj-6k62g-dycql-7h53p-atvkj-zg4to-gaogh-netha-ptybj-ntsgw-rqe"
)

// SubnetRole names a subnet dre holds to limits of its own ("NNS", "SNS",
// "II", "fiduciary", "European"); "" for every other subnet.
func SubnetRole(id string) string {
	switch id {
	case NNSSubnet:
		return "NNS"
	case SNSSubnet:
		return "SNS"
	case IISubnet:
		return "II"
	case FiduciarySubnet:
		return "fiduciary"
	case EuropeanSubnet:
		return "European"
	}
	return ""
}

// dfinityOnNNS is how many nodes DFINITY may hold on the NNS subnet, in one
// provider, data center and owner each (NNS proposal 135700; dre's
// target_dfinity_owned_nodes_count).
const dfinityOnNNS = 3

// DefaultMinimumsFor is DefaultMinimums for subnet id of size nodes, with
// the exceptions dre's business rules make for the subnets SubnetRole
// names:
//   - NNS, SNS, II and fiduciary may hold 3 nodes per country, not 2; the
//     NNS, SNS and II never more than a third of their nodes in one country;
//   - on the NNS DFINITY may hold 3 nodes (one provider, its data centers
//     and owners), every other actor one;
//   - the European subnet has no country limit for European countries.
//
// Each exception lowers a minimum to what the looser limit still
// guarantees, so a change dre accepts is never flagged for breaking it.
func DefaultMinimumsFor(id string, size int) Coefficients {
	m := DefaultMinimums(size)
	if size <= 0 {
		return m
	}
	switch id {
	case NNSSubnet, SNSSubnet, IISubnet, FiduciarySubnet:
		m[Country] = MinimumForLimit(size, countryLimitLarge)
		if id != FiduciarySubnet && m[Country] < 2 && size > 3 {
			// no country holds more than a third: at least two are needed
			m[Country] = 2
		}
	case EuropeanSubnet:
		m[Country] = MinimumForLimit(size, size)
	}
	if id == NNSSubnet {
		need := size/3 + 1
		one := 1
		if need > dfinityOnNNS {
			one = 1 + need - dfinityOnNNS
		}
		for _, a := range []Attribute{NodeProvider, DataCenter, DataCenterOwner} {
			m[a] = min(m[a], one)
		}
	}
	return m
}
