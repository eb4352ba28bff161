package main

import (
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

// docs/images.md, run as written from the checkout with this test binary
// as nibrunnerd: an image built and pushed to Debian's docker-registry on
// loopback, refused by tag, pinned by digest, inspected, turned into a
// document by app from-image, pulled by serve and answering on its
// hostname through the proxy, then removed.
func TestTheImagesGuideRunsAsWritten(t *testing.T) {
	testenv.RequireRoot(t) // the flattened image keeps its owners
	testenv.RequireCommand(t, "mke2fs", "mksquashfs", "curl", "docker-registry", "umoci", "skopeo")
	out := runGuide(t, "../../docs/images.md", 4*time.Minute)
	for _, says := range []string{
		"names no digest", "skopeo inspect",
		`entrypoint  ["/usr/bin/web"]`, "ports       8080/tcp",
		"web image-",
	} {
		if !strings.Contains(out, says) {
			t.Errorf("the guide never says %q", says)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the guide's output:\n%s", out)
	}
}
