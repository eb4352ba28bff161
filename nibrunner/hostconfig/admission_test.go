package hostconfig

import "testing"

func TestMemoryOvercommitDefaultsToOneAndIsReadWhenGivenAndRefusedByNameWhenWrong(t *testing.T) {
	if c := mustParse(t, readFull(t)); c.Admission.MemoryOvercommit != 1 {
		t.Errorf("[admission] left out gives memory_overcommit %g, want 1", c.Admission.MemoryOvercommit)
	}
	for body, want := range map[string]float64{"memory_overcommit = 1.5": 1.5, "memory_overcommit = 2": 2, "memory_overcommit = 16.0": 16} {
		if c := mustParse(t, append(readFull(t), "\n[admission]\n"+body+"\n"...)); c.Admission.MemoryOvercommit != want {
			t.Errorf("%s gives %g", body, c.Admission.MemoryOvercommit)
		}
	}
	for body, want := range map[string]string{
		"memory_overcommit = 0.5":   "admission.memory_overcommit is 0.5; it must be 1 to 16",
		"memory_overcommit = 17":    "admission.memory_overcommit is 17; it must be 1 to 16",
		"memory_overcommit = 0.0":   "admission.memory_overcommit is 0; leave the key out for its default",
		"memory_overcommit = \"2\"": "admission.memory_overcommit must be a number",
		"ratio = 2.0":               "unknown key admission.ratio",
	} {
		wantReason(t, append(readFull(t), "\n[admission]\n"+body+"\n"...), want)
	}
}

func TestExecLimitsDefaultAndAreReadWhenGivenAndRefusedByNameWhenWrong(t *testing.T) {
	if c := mustParse(t, readFull(t)); c.Exec.MaxSessionsPerApp != 4 || c.Exec.IdleTimeoutMs != 1800000 {
		t.Errorf("[exec] left out gives %+v, want 4 sessions and half an hour", c.Exec)
	}
	c := mustParse(t, append(readFull(t), "\n[exec]\nmax_sessions_per_app = 2\nidle_timeout_ms = 60000\n"...))
	if c.Exec.MaxSessionsPerApp != 2 || c.Exec.IdleTimeoutMs != 60000 {
		t.Errorf("[exec] given gives %+v", c.Exec)
	}
	for body, want := range map[string]string{
		"max_sessions_per_app = 65":   "exec.max_sessions_per_app is 65; it must be 1 to 64",
		"max_sessions_per_app = -1":   "exec.max_sessions_per_app is -1; it must be 1 to 64",
		"idle_timeout_ms = 10":        "exec.idle_timeout_ms is 10; it must be 1000 to 86400000",
		"idle_timeout_ms = 0":         "exec.idle_timeout_ms is 0; leave the key out for its default",
		"idle_timeout = 5":            "unknown key exec.idle_timeout",
		"max_sessions_per_app = \"\"": "exec.max_sessions_per_app must be",
	} {
		wantReason(t, append(readFull(t), "\n[exec]\n"+body+"\n"...), want)
	}
}
