package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// The sentences the planner's status functions say, in one place.

// msgVolumeDetached is a volume on the host that no document names.
const msgVolumeDetached = "the document no longer names this volume; it is kept until a document asks for it absent"

// volumeWorkMessage says how the work in flight on a volume goes.
func volumeWorkMessage(w VolumeWork, now time.Time) string {
	since := RoundDuration(now.Sub(w.Since)).Round(time.Second)
	switch w.Kind {
	case Grow:
		return fmt.Sprintf("being grown to %s (for %s): its guests are down until it is", bytesText(w.SizeBytes), since)
	case Teardown:
		return fmt.Sprintf("being deleted (for %s)", since)
	}
	s := "being made"
	if w.Phase == SeedQueued {
		return s + fmt.Sprintf(" (for %s): waiting for a turn, behind other volumes' work", since)
	}
	if !w.Seeding {
		return s + fmt.Sprintf(" (for %s)", since)
	}
	s += fmt.Sprintf(" from initialContents %q (for %s): ", w.ObjectKey, since)
	switch w.Phase {
	case SeedFetching:
		s += "fetching the archive, " + fetchedText(w)
	case SeedUnpacking:
		s += fmt.Sprintf("unpacking the archive (%s fetched), %s of files unpacked", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Unpacked)))
	case SeedFormatting:
		s += fmt.Sprintf("writing the filesystem (%s fetched, %s of files unpacked)", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Unpacked)))
	}
	if e := w.Earlier; e != nil {
		at := e.StartedAt.UTC().Format(time.RFC3339)
		if e.Resumed {
			s += fmt.Sprintf("; resumed: an attempt begun at %s was interrupted by a restart after fetching the whole archive (%s), which is unpacked without fetching it again", at, bytesText(uint64(e.Fetched)))
		} else {
			s += fmt.Sprintf("; restarted: an attempt begun at %s was interrupted by a restart after fetching %s, and the archive is fetched again from the start (the store is read whole, not resumed)", at, bytesText(uint64(e.Fetched)))
		}
	}
	return s
}

// fetchedText is how much of the archive is fetched, of how much.
func fetchedText(w VolumeWork) string {
	if w.Total <= 0 {
		return bytesText(uint64(w.Fetched)) + " so far"
	}
	return fmt.Sprintf("%s of %s (%d%%)", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Total)), w.Fetched*100/w.Total)
}

// jobMessage is the sentence a failed checkpoint's or export's job is
// reported with: what failed, its attempt, when it is tried again, why.
func jobMessage(what string, j JobFacts, now time.Time) string {
	return reported.Truncate(fmt.Sprintf("%s (attempt %d; the next try is in %s): %s", what, j.Attempts, RoundDuration(max(j.RetryAt.Sub(now), 0)), j.Message))
}

// volumeMissing judges a checkpoint or export (what) of volume id, which
// this host does not have (v.Deleted: it had it and deleted it), for app
// (empty for a checkpoint, which names none): whether it is failed rather
// than pending, and the sentence. The host makes a volume only when the
// document lists it present, so the entry waits (pending) while the
// document does (saying why its making failed, when v.Failure says), and
// otherwise nothing in this document will ever make the volume: it is
// failed, saying what to change. It is judged again with every document,
// so one that lists the volume makes it pending.
func volumeMissing(doc *desired.HostDesiredState, what, id, app string, v VolumeOf) (bool, string) {
	for i, dv := range doc.Volumes {
		if string(dv.VolumeId) != id {
			continue
		}
		if dv.DesiredState == desired.Present {
			if v.Failure != "" {
				return false, reported.Truncate(fmt.Sprintf("waiting for volume %s to be made (volumes[%d]), which failed: %s", id, i, v.Failure))
			}
			return false, fmt.Sprintf("waiting for volume %s to be made (volumes[%d])", id, i)
		}
		return true, fmt.Sprintf("volume %s is asked absent (volumes[%d].desiredState), so there is nothing to %s: ask for it present, or point this %s at a volume the host holds", id, i, what, what)
	}
	if v.Deleted {
		return true, fmt.Sprintf("volume %s was deleted from this host and this document does not list it, so there is nothing to %s: point this %s at a volume the host holds, or drop it", id, what, what)
	}
	forApp := ""
	if app != "" {
		forApp = " with appId " + app
	}
	return true, fmt.Sprintf("volume %s is not one of this document's volumes and this host has none by that name, so nothing will make it: add it to volumes%s, or point this %s at a volume the host holds", id, forApp, what)
}

// VolumeActionMessage is the sentence the report gives a volume whose
// action a only says something: a teardown held back (Blocked), a shrink
// refused (the volume is have bytes, the document asks for asked), no
// room on the disk (NoDisk).
func VolumeActionMessage(a VolumeAction, have, asked uint64) string {
	switch a.Kind {
	case Blocked:
		return fmt.Sprintf("asked absent but held back: app %s still uses it; it is deleted once no instance in the document names it", a.By)
	case RefuseShrink:
		return fmt.Sprintf("a volume only grows: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", have, asked, have)
	case NoDisk:
		return NoDiskMessage(a)
	}
	return ""
}

// VolumeFailedMessage is the sentence the report gives a volume whose
// action a (asking for asked bytes) failed with why; it is tried again at.
func VolumeFailedMessage(a VolumeAction, asked uint64, at time.Time, why string) string {
	what := "could not be made"
	switch a.Kind {
	case Teardown:
		what = "could not be deleted"
	case Grow:
		what = fmt.Sprintf("could not be grown to %d bytes", asked)
	}
	return what + " (tried again at " + at.UTC().Format(time.RFC3339) + "): " + why
}

// NoDiskMessage is the sentence the report gives a volume NoDisk held back.
func NoDiskMessage(a VolumeAction) string {
	what := fmt.Sprintf("is not made: it is %s", bytesText(a.SizeBytes))
	if a.Tried == Grow {
		what = fmt.Sprintf("is not grown to %s: that takes %s more", bytesText(a.SizeBytes), bytesText(a.NeedBytes))
	}
	return fmt.Sprintf("volume %s %s, and the disk volumes are made on has %s free for it (its free space less what the volumes already made may still fill); it is made once there is room: free disk space, or ask for a smaller volume", a.VolumeID, what, bytesText(a.RoomBytes))
}

// bytesText is n in bytes, and in MiB or GiB when that is shorter to read.
func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d bytes (%.1f GiB)", n, float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// The host's message, a reading's refusals and a wake's fixed answers.

// What a wake answers when it has no other word: the pass it waited for
// held the app's first start back and left no note, or its start
// committed without a guest up and no failure.
const (
	MsgNoSlotYet      = "its first start was held back and it has no slot yet; the next pass tries again"
	MsgWentDownWaking = "the guest went down while waking"
)

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
// next try is SleepBackoff's delay for failed away.
func SleepFailed(failed int, err error) string {
	return fmt.Sprintf("could not be put to sleep, and stays up (next try in %s): %v", RoundDuration(SleepBackoff.Delay(failed)), err)
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
func SleepNotNow(kind InstanceKind) string {
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

// memoryWaitingMessage explains a start held back by memory admission.
func memoryWaitingMessage(shortMiB uint64) string {
	return fmt.Sprintf("waiting to be started: its host is %d MiB short of the memory it needs", shortMiB)
}
