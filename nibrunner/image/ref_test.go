package image

import (
	"strings"
	"testing"
)

func TestAReferenceIsReadOnlyWithItsRegistryAndDigest(t *testing.T) {
	d := "sha256:" + strings.Repeat("0f", 32)
	for in, want := range map[string]Reference{
		"127.0.0.1:5000/apps/web@" + d:         {Registry: "127.0.0.1:5000", Repository: "apps/web", Digest: d},
		"ghcr.io/org/app:v1.2@" + d:            {Registry: "ghcr.io", Repository: "org/app", Digest: d},
		"registry.example/a/b/c@" + d + "  \n": {Registry: "registry.example", Repository: "a/b/c", Digest: d},
	} {
		got, err := ParseReference(in)
		if err != nil || got != want {
			t.Errorf("ParseReference(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"nginx@" + d:                   "registry",
		"ghcr.io/org/app@sha256:abc":   "64 lowercase hex",
		"ghcr.io/org/app@md5:" + d[7:]: "64 lowercase hex",
		"ghcr.io/org/app":              "names no digest",
		"":                             "empty",
		"ghcr.io/Org/App@" + d:         "ghcr.io/Org/App",
	} {
		_, err := ParseReference(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseReference(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}
