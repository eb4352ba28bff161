package plan

import (
	"fmt"

	"alpnib.dev/nibrunner/desired"
)

// Wakeable reports whether a request may wake instance in (nil: the
// document does not list it): the document asks it up, and the host can
// carry it (no problem is recorded for it). A request for an app that is
// not wakeable is answered "not running".
func Wakeable(in *desired.DesiredInstance, problems map[string]string) bool {
	return in != nil && in.DesiredState != desired.StateStopped && problems[string(in.AppId)] == ""
}

// WakeAction is the planner's answer to a request that waits for instance
// in of doc, from obs (where the daemon marked it WantAwake): the action
// that brings it up (Start, Wake, Replace, Recover or Restart) and "", or
// why the wake cannot bring it up now, the sentence the wake answers.
// When that is because the deployment has just spent its restart budget
// the action is GiveUp, which the daemon records as a pass would.
func WakeAction(doc *desired.HostDesiredState, in *desired.DesiredInstance, obs Observed) (InstanceAction, string) {
	const outOfRestarts = "it is out of restarts until a new deploymentId"
	x, ok := App(doc, in, obs)
	if ok {
		switch x.Kind {
		case Start, Wake, Replace, Recover, Restart:
			return x, ""
		case GiveUp:
			return x, outOfRestarts
		}
		return x, fmt.Sprintf("the planner asks %s first", x.Kind)
	}
	dep := string(in.DeploymentId)
	o := obs.Instances[string(in.AppId)]
	switch {
	case o.Recorded == dep && o.outOfRestarts(dep):
		return x, outOfRestarts
	case o.VM == Exited || o.failedToStart(dep):
		// Its restart's backoff is not over (the guest exited, or its
		// last start failed).
		return x, "it failed and waits for its restart"
	case o.Note != "":
		return x, "nothing to wake: " + o.Note
	}
	return x, "nothing to wake: its volume is not ready"
}
