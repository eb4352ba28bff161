package daemon

import "testing"

func TestTheMachineNameIsMadeAValidHostID(t *testing.T) {
	for in, want := range map[string]string{
		"node-1":                  "node-1",
		"node1.example.com":       "node1-example-com",
		"":                        "host",
		"-x":                      "x",
		"ünï":                     "n--",
		string(make([]byte, 100)): "host",
	} {
		if got := hostID(in); got != want {
			t.Errorf("hostID(%q) = %q, want %q", in, got, want)
		}
	}
	long := hostID("a23456789012345678901234567890123456789012345678901234567890123456789")
	if len(long) != 63 {
		t.Fatalf("len %d", len(long))
	}
}
