package desired

import (
	"encoding/json"
	"fmt"
	"testing"
)

// bigDocument is base with n instances, each on its own volume: the size
// of a full host.
func bigDocument(b *testing.B, n int) []byte {
	b.Helper()
	tree := parseTree(b, base).(map[string]any)
	web := tree["instances"].([]any)[0].(map[string]any)
	vol := tree["volumes"].([]any)[0].(map[string]any)
	var instances, volumes []any
	for i := 0; i < n; i++ {
		in := clone(b, web)
		in["appId"] = fmt.Sprintf("app-%d", i)
		in["volumeId"] = fmt.Sprintf("vol-%d", i)
		instances = append(instances, in)
		v := clone(b, vol)
		v["volumeId"] = fmt.Sprintf("vol-%d", i)
		v["appId"] = fmt.Sprintf("app-%d", i)
		volumes = append(volumes, v)
	}
	tree["instances"], tree["volumes"] = instances, volumes
	return mustJSON(b, tree)
}

func clone(b *testing.B, m map[string]any) map[string]any {
	var out map[string]any
	if err := json.Unmarshal(mustJSON(b, m), &out); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkDecode1000Instances measures what the daemon pays for each
// change to a full host's desired.json.
func BenchmarkDecode1000Instances(b *testing.B) {
	data := bigDocument(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlainUnmarshal1000Instances is the floor Decode is measured
// against: encoding/json into the same types, checking nothing.
func BenchmarkPlainUnmarshal1000Instances(b *testing.B) {
	data := bigDocument(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var doc HostDesiredState
		if err := json.Unmarshal(data, &doc); err != nil {
			b.Fatal(err)
		}
	}
}
