package nns

import (
	"fmt"
	"strings"
)

// Governance's limits on the fields of a proposal a user submits
// (dfinity/ic rs/nns/governance/api/src/proposal_validation.rs at
// 00acdcfbdd5feba7d1cc80c3bb22fb15ec0546c6; the url rules in
// rs/nervous_system/common/validation/src/lib.rs at
// 1a0e2a0a2ebf969db3f4100f8d52be1f7492c6d5). MakeProposal refuses a
// proposal that breaks any of them before it is filed.
const (
	ProposalTitleMinBytes   = 5
	ProposalTitleMaxBytes   = 256
	ProposalSummaryMaxBytes = 30000
	ProposalURLMinChars     = 10
	ProposalURLMaxChars     = 2048
	// ProposalURLDomain is the one domain a proposal url may link to.
	ProposalURLDomain = "forum.dfinity.org"
)

// CheckProposalTitle says why governance would refuse title, or nil.
// Lengths are in bytes, as governance counts them.
func CheckProposalTitle(title string) error {
	switch n := len(title); {
	case n < ProposalTitleMinBytes:
		return fmt.Errorf("the title is %d bytes; governance refuses one shorter than %d bytes", n, ProposalTitleMinBytes)
	case n > ProposalTitleMaxBytes:
		return fmt.Errorf("the title is %d bytes; governance refuses one longer than %d bytes", n, ProposalTitleMaxBytes)
	}
	return nil
}

// CheckProposalSummary says why governance would refuse summary, or nil.
func CheckProposalSummary(summary string) error {
	if n := len(summary); n > ProposalSummaryMaxBytes {
		return fmt.Errorf("the summary is %d bytes; governance refuses one longer than %d bytes", n, ProposalSummaryMaxBytes)
	}
	return nil
}

// CheckProposalURL says why governance would refuse url, or nil. An empty
// url is allowed; any other must be https://forum.dfinity.org/…, between
// 10 and 2048 characters, without a second scheme separator, credentials
// or a port (the domain is compared whole, so a port makes it another).
func CheckProposalURL(url string) error {
	if url == "" {
		return nil
	}
	switch n := len(url); {
	case n > ProposalURLMaxChars:
		return fmt.Errorf("the url is %d characters; governance refuses one longer than %d", n, ProposalURLMaxChars)
	case n < ProposalURLMinChars:
		return fmt.Errorf("the url is %d characters; governance refuses one shorter than %d", n, ProposalURLMinChars)
	}
	rest, ok := strings.CutPrefix(url, "https://")
	switch {
	case !ok:
		return fmt.Errorf("the url %q does not begin with https://, which governance requires", url)
	case strings.Contains(rest, "://"):
		return fmt.Errorf("the url %q holds a second ://, which governance refuses", url)
	case strings.Contains(url, "@"):
		return fmt.Errorf("the url %q holds an @ (credentials), which governance refuses", url)
	}
	domain, _, _ := strings.Cut(rest, "/")
	if domain != ProposalURLDomain {
		return fmt.Errorf("the url %q links to %s; governance accepts links to %s only", url, domain, ProposalURLDomain)
	}
	return nil
}
