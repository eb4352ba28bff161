package main

import (
	"fmt"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/generate"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/ic/nns"
)

// urlCheck is the finding about a proposal with no url, or nil. A url
// that is given is held to governance's rules at load already (it must be
// https://forum.dfinity.org/…); an empty one governance accepts, since its
// validation skips it, but voters read the forum thread the url links, so
// plan and apply warn and say what to put there. A generated block leaves
// url empty for exactly that reason.
func urlCheck(d *config.Proposal) *preflight.Check {
	if d.URL != "" {
		return nil
	}
	return &preflight.Check{
		Severity: preflight.Warning,
		At:       fmt.Sprintf("%s:%d", d.Range.Filename, d.Range.Start.Line),
		Message: fmt.Sprintf("proposal %q has no url: governance accepts that, but voters look for its forum thread; open one on %s and put its address (https://%s/t/…) in url, the only site governance accepts there",
			d.Name, nns.ProposalURLDomain, nns.ProposalURLDomain),
	}
}

// withURLCheck adds urlCheck's finding to r; a warning leaves the
// verdict as it is.
func withURLCheck(r preflight.Report, d *config.Proposal) preflight.Report {
	if c := urlCheck(d); c != nil {
		r.Checks = append(r.Checks, *c)
	}
	return r
}

// withDeclared notes in r each declared resource the proposal d moves the
// fleet away from, with its line and what to declare: once it executes,
// the declaration is the one to change (plan --generate does not undo a
// recorded proposal), so it is said before it is made. A refused or no-op
// proposal moves nothing.
func withDeclared(r preflight.Report, d *config.Proposal, res *config.Resources) preflight.Report {
	if r.Verdict == preflight.VerdictRefused || r.Verdict == preflight.VerdictNoOp {
		return r // it will not execute, or changes nothing
	}
	for _, s := range generate.AwayOf(res, d) {
		r.Checks = append(r.Checks, preflight.Check{Severity: preflight.Note,
			Message: "the declared resources will drift once it executes: " + s})
	}
	return r
}
