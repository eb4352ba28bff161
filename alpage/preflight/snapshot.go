package preflight

import "alpnib.dev/alpage/kinds"

// What a kind's Fetch reads, by thing read; each kind's facts are of its
// own type (alpage/kinds: MembershipFacts, DeployGuestOSFacts, …).
type (
	NodeFacts     = kinds.NodeFacts
	VersionFacts  = kinds.VersionFacts
	OperatorFacts = kinds.OperatorFacts
	ProviderFacts = kinds.ProviderFacts
)
