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
