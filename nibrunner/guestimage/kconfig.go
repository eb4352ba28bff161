package guestimage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// kernelConfig is a kernel's build configuration (boot/config-<release>),
// option name to value: "y", "m", a number or a quoted string. An option
// that is "not set" is absent.
type kernelConfig map[string]string

// parseKernelConfig reads a kernel .config. name is the file, for errors.
func parseKernelConfig(name string, b []byte) (kernelConfig, error) {
	c := kernelConfig{}
	s := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; s.Scan(); n++ {
		l := strings.TrimSpace(s.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || !strings.HasPrefix(k, "CONFIG_") {
			return nil, fmt.Errorf("%s:%d: %q is not a CONFIG_NAME=value line", name, n, l)
		}
		c[k] = v
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return c, nil
}

func readKernelConfig(path string) (kernelConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the guest kernel's configuration: %w", err)
	}
	return parseKernelConfig(path, b)
}

// memoryReturn says what the kernel lacks to hand memory it does not use
// back to the host: free page reporting (CONFIG_PAGE_REPORTING, built in)
// through the virtio balloon (CONFIG_VIRTIO_BALLOON, built in or a
// module). Empty means nothing: QEMU's free-page-reporting=on balloon then
// takes back every free 2 MiB block within seconds. Without it the guest
// still boots and runs, but each page it ever touched stays host memory.
func (c kernelConfig) memoryReturn() string {
	var missing []string
	if c["CONFIG_PAGE_REPORTING"] != "y" {
		missing = append(missing, "CONFIG_PAGE_REPORTING=y")
	}
	if v := c["CONFIG_VIRTIO_BALLOON"]; v != "y" && v != "m" {
		missing = append(missing, "CONFIG_VIRTIO_BALLOON=y or m")
	}
	if len(missing) == 0 {
		return ""
	}
	return "the guest kernel lacks " + strings.Join(missing, " and ") +
		": guests cannot hand the memory they free back to the host, so each holds every page it ever touched"
}
