package explain

import (
	"context"
	"errors"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

func TestAGuestsStopIsToldByItsOwnWordElseByItsExitCode(t *testing.T) {
	code := func(n int) *int { return &n }
	tests := []struct {
		name string
		code *int
		said string
		want string
	}{
		{"its own word and a code", code(3), "config.toml is missing", "config.toml is missing (exit code 3)"},
		{"its own word and no code", nil, "config.toml is missing", "config.toml is missing"},
		{"no word and no code", nil, "", "the guest stopped on its own and its exit code is unknown"},
		{"a clean exit", code(0), "", "the app exited with code 0"},
		{"an exit code below the signals", code(128), "", "the app exited with code 128"},
		{"the first signal", code(129), "", "the guest was ended by signal 1 (exit code 129)"},
		{"SIGKILL", code(137), "", "the guest was ended by signal 9 (exit code 137)"},
		{"the last signal", code(192), "", "the guest was ended by signal 64 (exit code 192)"},
		{"past the signals", code(193), "", "the app exited with code 193"},
		{"its word wins over a signal", code(137), "out of memory", "out of memory (exit code 137)"},
	}
	for _, tt := range tests {
		if got := ExitMessage(tt.code, tt.said); got != tt.want {
			t.Errorf("%s: ExitMessage = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestAFailedStartSaysWhetherItWasAStartOrAWake(t *testing.T) {
	err := errors.New("qemu: exit status 1")
	tests := []struct {
		wake bool
		want string
	}{
		{false, "the microVM could not be started: qemu: exit status 1"},
		{true, "the microVM could not be woken: qemu: exit status 1"},
	}
	for _, tt := range tests {
		if got := StartFailed(tt.wake, err); got != tt.want {
			t.Errorf("StartFailed(%v) = %q, want %q", tt.wake, got, tt.want)
		}
	}
}

func TestAFailedSleepSaysWhenItIsTriedAgain(t *testing.T) {
	err := errors.New("snapshot: disk full")
	for failed := 1; failed <= 12; failed++ {
		want := "could not be put to sleep, and stays up (next try in " + plan.RoundDuration(plan.SleepBackoff.Delay(failed)).String() + "): snapshot: disk full"
		if got := SleepFailed(failed, err); got != want {
			t.Errorf("SleepFailed(%d) = %q, want %q", failed, got, want)
		}
	}
	if a, b := SleepFailed(1, err), SleepFailed(12, err); a == b {
		t.Errorf("the first and twelfth failed sleeps say the same next try: %q", a)
	}
}

func TestTheSlotAndStopNotesNameWhatHeldTheAppBack(t *testing.T) {
	err := errors.New("disk I/O error")
	tests := []struct{ got, want string }{
		{SlotsFull(4), "waiting to be started: every slot of this host is taken (max_apps = 4)"},
		{SlotUnrecorded(err), "waiting to be started: its slot could not be recorded: disk I/O error"},
		{StopFailed(err), "could not be stopped: disk I/O error"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestAWakesAnswerNamesTheAppAndKeepsWhatEndedIt(t *testing.T) {
	if got, want := WakeAnswer("web", plan.MsgWentDownWaking).Error(), "wake web: the guest went down while waking"; got != want {
		t.Errorf("WakeAnswer = %q, want %q", got, want)
	}
	err := WakeEnded("web", context.Canceled)
	if got, want := err.Error(), "wake web: context canceled"; got != want {
		t.Errorf("WakeEnded = %q, want %q", got, want)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WakeEnded(%v) does not wrap it", context.Canceled)
	}
}

func TestASleepsAnswerSaysWhyAndWrapsItsRefusal(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		want    string
		refused bool
	}{
		{"unlisted", SleepRefused("web", MsgSleepUnlisted), "sleep web: desired.json does not list it: only a running on-request app can be put to sleep", true},
		{"asked running", SleepRefused("web", SleepAskedState(desired.StateRunning)), "sleep web: desired.json asks it running: only a running on-request app can be put to sleep", true},
		{"no guest", SleepRefused("web", MsgSleepNoGuest), "sleep web: it has no running guest: only a running on-request app can be put to sleep", true},
		{"not now", SleepRefused("web", SleepNotNow(plan.Restart)), "sleep web: the planner does not put it to sleep now (restart): only a running on-request app can be put to sleep", true},
		{"ended", SleepEnded("web", context.Canceled), "sleep web: context canceled", false},
		{"not done, no word", SleepNotDone("web", ""), "sleep web: it did not go to sleep", false},
		{"not done, the report's word", SleepNotDone("web", "could not be put to sleep, and stays up (next try in 1s): full"), "sleep web: could not be put to sleep, and stays up (next try in 1s): full", false},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if got := errors.Is(tt.err, ErrCannotSleep); got != tt.refused {
			t.Errorf("%s: errors.Is(ErrCannotSleep) = %v, want %v", tt.name, got, tt.refused)
		}
	}
	if !errors.Is(SleepEnded("web", context.Canceled), context.Canceled) {
		t.Error("SleepEnded does not wrap what ended the wait")
	}
}

func TestACopyNotAtRestNamesTheApp(t *testing.T) {
	listing := errors.New("list guests: broken pipe")
	tests := []struct {
		err  error
		want string
	}{
		{CopyCannotFreeze("db"), "app db's guest runs and this host's VMM cannot freeze its filesystem for a consistent copy"},
		{CopyUnsure("db", listing), "cannot tell whether app db's guest started during the copy: list guests: broken pipe"},
		{CopyTorn("db"), "app db's guest started during the copy, which may be torn; the next try freezes it"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%q, want %q", got, tt.want)
		}
	}
	if !errors.Is(CopyUnsure("db", listing), listing) {
		t.Error("CopyUnsure does not wrap the listing's error")
	}
}

func TestARefusalSaysEachReasonJoined(t *testing.T) {
	tests := []struct {
		name string
		rs   []desired.Reason
		want string
	}{
		{"none", nil, ""},
		{"a rule alone", []desired.Reason{{Rule: "not JSON"}}, "not JSON"},
		{"a path and rule", []desired.Reason{{Path: "instances[0].appId", Rule: "is required"}}, "instances[0].appId: is required"},
		{"two, in order", []desired.Reason{{Path: "volumes[1].sizeBytes", Rule: "must be positive"}, {Rule: "unknown field \"x\""}}, "volumes[1].sizeBytes: must be positive; unknown field \"x\""},
	}
	for _, tt := range tests {
		if got := ReasonsText(tt.rs); got != tt.want {
			t.Errorf("%s: ReasonsText = %q, want %q", tt.name, got, tt.want)
		}
	}
	err := errors.New("instances[0]: bad")
	if got, want := RefusedBefore(err), "the document accepted before this daemon started is refused now, so nothing changes until a readable one arrives: instances[0]: bad"; got != want {
		t.Errorf("RefusedBefore = %q, want %q", got, want)
	}
	if got, want := LayersNotReady(err), "its layers could not be made ready: instances[0]: bad"; got != want {
		t.Errorf("LayersNotReady = %q, want %q", got, want)
	}
}

func TestFailedProbesNamesWhatWasProbedThePortAndTheGrace(t *testing.T) {
	for _, tc := range []struct {
		kind, path string
		want       string
	}{
		{"tcp", "", "nothing answered on port 3000 inside the guest: 3 health probes failed after the 30000ms grace period"},
		{"http", "/healthz", "GET /healthz on port 3000 inside the guest did not answer 2xx: 3 health probes failed after the 30000ms grace period"},
	} {
		if got := FailedProbes(tc.kind, 3000, tc.path, 3, 30*time.Second); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.kind, got, tc.want)
		}
	}
}
