package suggest

import "testing"

func TestNearestSuggestsTheNameATypoWasMeantToBe(t *testing.T) {
	fields := []string{"vcpuCount", "memoryMib", "cacheBytes"}
	for typed, want := range map[string]string{
		"memoryMB":     "memoryMib",
		"MemoryMib":    "memoryMib",
		"memory":       "memoryMib",
		"vcpu":         "vcpuCount",
		"vcpuCont":     "vcpuCount",
		"cachebyte":    "cacheBytes",
		"memoryMibs":   "memoryMib",
		"vcpuCountMax": "vcpuCount",
	} {
		got, ok := Nearest(typed, fields)
		if !ok || got != want {
			t.Errorf("Nearest(%q) = %q, %v; want %q", typed, got, ok, want)
		}
	}
}

func TestNearestSuggestsNothingForANameUnlikeAnyKnownOne(t *testing.T) {
	for _, typed := range []string{"labels", "x", "annotations", "mb"} {
		if got, ok := Nearest(typed, []string{"vcpuCount", "memoryMib", "cacheBytes"}); ok {
			t.Errorf("Nearest(%q) = %q; want no suggestion", typed, got)
		}
	}
}
