package hostconfig

import (
	"os"
	"testing"
)

// FuzzParse: any bytes either parse into a configuration or are refused
// with reasons; nothing panics, and what parses parses the same again.
func FuzzParse(f *testing.F) {
	f.Add(Default("/"))
	if full, err := os.ReadFile("../../examples/config.toml"); err == nil {
		f.Add(full)
	}
	f.Add([]byte("max_apps = 1\n[paths]\nstate_dir = 1\n"))
	f.Add([]byte("[proxy.http.tls]\ncertificate = \"/c\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatalf("refused yet returned a configuration: %v", err)
			}
			if err.Error() == "" {
				t.Fatal("refused without a reason")
			}
			return
		}
		if _, err := Parse(data); err != nil {
			t.Fatalf("parsed once, refused the second time: %v", err)
		}
	})
}
