package desired

import (
	"os"
	"testing"
)

// FuzzDecode holds the decoder to three promises on any input: it never
// panics, it either accepts or gives at least one reason, and what it
// accepts survives a round trip through JSON unchanged.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(`{"hostId":"h","volumes":[],"instances":[],"checkpoints":[],"exports":[]}`))
	for _, path := range examples(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
		if (doc == nil) == (err == nil) {
			t.Fatalf("Decode returned doc=%v err=%v: exactly one must be set", doc != nil, err)
		}
		if err != nil {
			if len(Reasons(err)) == 0 {
				t.Fatal("a refusal with no reason")
			}
			return
		}
		roundTrip(t, data)
		_ = InstanceProblems(doc, HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 2})
		for _, in := range doc.Instances {
			_ = in.EffectiveSleepPolicy()
		}
	})
}
