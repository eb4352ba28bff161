package guestimage

import (
	"strings"
	"testing"
)

func TestParseKernelConfig(t *testing.T) {
	c, err := parseKernelConfig("config", []byte("#\n# comment\nCONFIG_A=y\n# CONFIG_B is not set\n\nCONFIG_C=\"x=y\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c["CONFIG_A"] != "y" || c["CONFIG_C"] != `"x=y"` || len(c) != 2 {
		t.Fatalf("parsed %v", c)
	}
	_, err = parseKernelConfig("boot/config-x", []byte("CONFIG_A=y\nnonsense\n"))
	if err == nil || !strings.Contains(err.Error(), "boot/config-x:2:") {
		t.Fatalf("bad line: %v, want an error naming boot/config-x:2", err)
	}
}

func TestMemoryReturnNamesWhatTheKernelLacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    kernelConfig
		want []string // substrings; none means no complaint
	}{
		{"Debian cloud: reporting built in, balloon a module", kernelConfig{"CONFIG_PAGE_REPORTING": "y", "CONFIG_VIRTIO_BALLOON": "m"}, nil},
		{"balloon built in", kernelConfig{"CONFIG_PAGE_REPORTING": "y", "CONFIG_VIRTIO_BALLOON": "y"}, nil},
		{"no reporting", kernelConfig{"CONFIG_VIRTIO_BALLOON": "m"}, []string{"CONFIG_PAGE_REPORTING=y"}},
		{"no balloon", kernelConfig{"CONFIG_PAGE_REPORTING": "y"}, []string{"CONFIG_VIRTIO_BALLOON"}},
		{"neither", kernelConfig{}, []string{"CONFIG_PAGE_REPORTING=y and CONFIG_VIRTIO_BALLOON"}},
	} {
		got := tc.c.memoryReturn()
		if len(tc.want) == 0 && got != "" {
			t.Errorf("%s: %q, want nothing", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to name %s", tc.name, got, w)
			}
		}
	}
}
