// Package explain says in sentences what the daemon and its planner
// decided and why: the host's message and a reading's refusals, how a
// guest's start, stop, sleep or wake went, a wake's and a sleep's answers,
// why a copy of a volume was not made, why a health check gave up. The
// planner (nibrunner/plan) decides and holds no sentence of these; the
// daemon renders them here, so that every word a person reads in
// reported.json, a log or an answer of the control socket has one home.
package explain

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// The host's message, a reading's refusals and a wake's fixed answers.

// Keeping says what the host does while it takes no new document: it runs
// nothing when it never accepted one, and otherwise keeps converging on
// the one it accepted (digest, its sha256 in hex).
func Keeping(digest string) string {
	if digest == "" {
		return "no document was accepted yet, so this host runs nothing"
	}
	short := digest
	if len(short) > 12 {
		short = short[:12]
	}
	return "the host keeps converging on the document it accepted before (sha256 " + short + "…)"
}

// NoDocument is the refusal of a reading that holds no document (the file
// is missing or unreadable): what the host does meanwhile, then why.
func NoDocument(keeping string, err error) string {
	return fmt.Sprintf("no document to take (%s): %v", keeping, err)
}

// Refused is the refusal of a document that does not decode: what the
// host does meanwhile, then the reasons.
func Refused(keeping, reasons string) string {
	return fmt.Sprintf("desired.json was refused (%s): %s", keeping, reasons)
}

// ReasonsText is a refused document's reasons (desired.Reasons) as the
// refusal says them: each "path: rule" (the rule alone when it names no
// path), joined by "; ".
func ReasonsText(rs []desired.Reason) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

// RefusedBefore is the refusal of the document an older daemon accepted
// and this one's rules refuse (err): the host is kept as it is.
func RefusedBefore(err error) string {
	return "the document accepted before this daemon started is refused now, so nothing changes until a readable one arrives: " + err.Error()
}

// Unrecorded is the refusal of a document that decoded but could not be
// recorded: it is not taken until it is.
func Unrecorded(err error) string {
	return "desired.json could not be recorded, so it is not taken yet (it is tried again at every pass, and whenever the file is written): " + err.Error()
}

// HostMessage is the report's message, from what the document's source
// says of itself (problem) and why the last reading was refused
// (refusal): either alone when the other is "", else the source's first.
// When the source is why there is no document (noDocument: the object was
// deleted), its sentence says so and only what the host does meanwhile
// (keeping) follows, not the refusal, which would say it twice.
func HostMessage(problem, refusal string, noDocument bool, keeping string) string {
	switch {
	case problem == "":
		return refusal
	case refusal == "":
		return problem
	case noDocument:
		return problem + " (" + keeping + ")"
	}
	return problem + "; " + refusal
}

// What the report says of an app's guest: how its start, wake, stop or
// sleep went, and why it stopped.

const (
	// MsgWokenCold is the report's word on an app whose wake found its
	// snapshot unusable: the VMM booted it cold and dropped the snapshot.
	MsgWokenCold = "woken by a cold boot: its memory snapshot could not be restored and was dropped, so what the guest held in memory is lost; its volume is as the guest left it"
	// MsgSnapshotDropped follows why a wake of a snapshot failed.
	MsgSnapshotDropped = "; its memory snapshot was dropped and it is booted again from its volume"
)

// WokenCold is the report's word on an app woken by a cold boot, with why
// its snapshot was not restored when the VMM said.
func WokenCold(why string) string {
	if why == "" {
		return MsgWokenCold
	}
	return MsgWokenCold + " (" + why + ")"
}

// StartFailed says why a start (or, wake, a wake) did not bring a microVM
// up: the VMM's error.
func StartFailed(wake bool, err error) string {
	verb := "started"
	if wake {
		verb = "woken"
	}
	return fmt.Sprintf("the microVM could not be %s: %v", verb, err)
}

// ExitMessage says why a guest stopped: its own word when it gave one
// (said, nibrun-init's exit report), else what its exit code tells (nil:
// unknown; 129 to 192: ended by signal code-128).
func ExitMessage(code *int, said string) string {
	if said != "" {
		if code != nil {
			return fmt.Sprintf("%s (exit code %d)", said, *code)
		}
		return said
	}
	if code == nil {
		return "the guest stopped on its own and its exit code is unknown"
	}
	if *code > 128 && *code < 128+65 {
		return fmt.Sprintf("the guest was ended by signal %d (exit code %d)", *code-128, *code)
	}
	return fmt.Sprintf("the app exited with code %d", *code)
}

// SlotsFull is the note on an app held back because all maxApps slots of
// the host are taken.
func SlotsFull(maxApps int) string {
	return fmt.Sprintf("waiting to be started: every slot of this host is taken (max_apps = %d)", maxApps)
}

// SlotUnrecorded is the note on an app whose new slot could not be
// recorded (err), so it is not started yet.
func SlotUnrecorded(err error) string {
	return "waiting to be started: its slot could not be recorded: " + err.Error()
}

// LayersNotReady is why a start did not boot: its layers could not be
// made ready (err).
func LayersNotReady(err error) string { return "its layers could not be made ready: " + err.Error() }

// StopFailed is the report's word on an app whose guest could not be
// taken down (err).
func StopFailed(err error) string { return "could not be stopped: " + err.Error() }

// SleepFailed is the report's word on an app whose guest could not be put
// to sleep (err) for the failed-th time in a row: it stays up, and the
// next try is plan.SleepBackoff's delay for failed away.
func SleepFailed(failed int, err error) string {
	return fmt.Sprintf("could not be put to sleep, and stays up (next try in %s): %v", plan.RoundDuration(plan.SleepBackoff.Delay(failed)), err)
}

// A wake's answers are "wake APP: " and why it did not bring the app up.

// WakeAnswer is a wake's answer for app when why is a sentence: the
// planner's refusal, the guest's failure, why its start is held back.
func WakeAnswer(app, why string) error { return fmt.Errorf("wake %s: %s", app, why) }

// WakeEnded is a wake's answer for app when err is what ended it (the
// daemon closing, the caller's context, an app that is not running); the
// answer wraps err, so callers can tell which.
func WakeEnded(app string, err error) error { return fmt.Errorf("wake %s: %w", app, err) }

// A sleep's answers are "sleep APP: " and why it did not put the app to
// sleep; those that refuse the sleep wrap ErrCannotSleep.

// ErrCannotSleep is what a sleep the host refuses wraps.
var ErrCannotSleep = errors.New("only a running on-request app can be put to sleep")

// Why a sleep is refused, when it is not the planner's doing.
const (
	MsgSleepUnlisted = "desired.json does not list it"
	MsgSleepNoGuest  = "it has no running guest"
)

// SleepAskedState is why a sleep of an app the document asks state
// (not onRequest) is refused.
func SleepAskedState(state desired.DesiredInstanceState) string {
	return fmt.Sprintf("desired.json asks it %s", state)
}

// SleepNotNow is why a sleep is refused when the planner's action for the
// app is kind, not Sleep.
func SleepNotNow(kind plan.InstanceKind) string {
	return fmt.Sprintf("the planner does not put it to sleep now (%s)", kind)
}

// SleepRefused is a sleep's answer for app when the host refuses it (why).
func SleepRefused(app, why string) error {
	return fmt.Errorf("sleep %s: %s: %w", app, why, ErrCannotSleep)
}

// SleepEnded is a sleep's answer for app when err ended the wait for it
// (the daemon closing, the caller's context); the answer wraps err.
func SleepEnded(app string, err error) error { return fmt.Errorf("sleep %s: %w", app, err) }

// SleepNotDone is a sleep's answer for app when its guest did not go to
// sleep: the report's word on it (message), or that it did not.
func SleepNotDone(app, message string) error {
	if message == "" {
		message = "it did not go to sleep"
	}
	return fmt.Errorf("sleep %s: %s", app, message)
}

// Why a copy of a volume (a checkpoint's, an export's) is not made from a
// volume at rest, naming the app whose guest uses it; its job fails and is
// tried again.

// CopyCannotFreeze is the failure of a copy of the volume app's running
// guest uses, on a host whose VMM cannot freeze its filesystem.
func CopyCannotFreeze(app string) error {
	return fmt.Errorf("app %s's guest runs and this host's VMM cannot freeze its filesystem for a consistent copy", app)
}

// CopyUnsure is the failure of a copy when whether app's guest started
// during it cannot be told (err, the VMM's listing).
func CopyUnsure(app string, err error) error {
	return fmt.Errorf("cannot tell whether app %s's guest started during the copy: %w", app, err)
}

// CopyVolumeAtWork is the failure of a copy whose volume is being made,
// grown or deleted: the job's retry copies it once that work is done.
func CopyVolumeAtWork(volumeID string) error {
	return fmt.Errorf("volume %s is being changed (made, grown or deleted); the copy waits for that to end", volumeID)
}

// CopyTorn is the failure of a copy during which app's guest started.
func CopyTorn(app string) error {
	return fmt.Errorf("app %s's guest started during the copy, which may be torn; the next try freezes it", app)
}

// FailedProbes explains a health check that gave up, in a sentence
// a person can act on.
func FailedProbes(kind string, port int, path string, failures int, grace time.Duration) string {
	what := fmt.Sprintf("nothing answered on port %d inside the guest", port)
	if kind == "http" {
		what = fmt.Sprintf("GET %s on port %d inside the guest did not answer 2xx", path, port)
	}
	return fmt.Sprintf("%s: %d health probes failed after the %dms grace period", what, failures, grace.Milliseconds())
}
