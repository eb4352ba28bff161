package explain

import (
	"fmt"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// InstanceStatus is what the report says of instance in, as the planner
// decides it (plan.InstanceStatus) from obs, in words: the sentence it
// passes on, then the restart it names.
func InstanceStatus(in *desired.DesiredInstance, obs plan.Observed) plan.Status {
	s := plan.InstanceStatus(in, obs)
	s.Message = StatusMessage(s)
	s.Restart = plan.RestartNote{}
	return s
}

// StatusMessage is the sentence of s: its message, and the restart it
// names.
func StatusMessage(s plan.Status) string {
	r := s.Restart
	switch r.Says {
	case plan.RestartOutOf:
		return fmt.Sprintf("out of restarts: it was restarted %d times and failed again (restartPolicy.maxRestarts is %d); last: %s. Deploy a new deploymentId to try again", r.N, r.MaxRestarts, s.Message)
	case plan.RestartIn:
		return s.Message + fmt.Sprintf("; it is restarted in %s", plan.RoundDuration(r.In))
	case plan.RestartNext:
		return s.Message + fmt.Sprintf("; restart %d of %d in %s", r.N, r.MaxRestarts, plan.RoundDuration(r.In))
	}
	return s.Message
}

// WakeRefused is why a wake cannot bring an app up now, as the planner
// says it (plan.WakeAction), in words ("" when the wake goes ahead).
func WakeRefused(r plan.WakeRefusal) string {
	switch r.Why {
	case plan.WakeOutOfRestarts:
		return "it is out of restarts until a new deploymentId"
	case plan.WakePlannerFirst:
		return fmt.Sprintf("the planner asks %s first", r.Kind)
	case plan.WakeAwaitsRestart:
		return "it failed and waits for its restart"
	case plan.WakeHeldBack:
		return "nothing to wake: " + r.Note
	case plan.WakeVolumeNotReady:
		return "nothing to wake: its volume is not ready"
	}
	return ""
}
