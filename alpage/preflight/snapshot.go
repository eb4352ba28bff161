package preflight

import "alpnib.dev/alpage/kinds"

// The live state a preflight reads; a kind's Fetch fills in what its
// Check needs (alpage/kinds).
type (
	Snapshot      = kinds.Snapshot
	NodeFacts     = kinds.NodeFacts
	VersionFacts  = kinds.VersionFacts
	OperatorFacts = kinds.OperatorFacts
	ProviderFacts = kinds.ProviderFacts
)
