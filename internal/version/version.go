// Package version reports the release version of the binaries in this module.
//
// The release build stamps Version with
//
//	-ldflags "-X alpnib.dev/internal/version.Version=v1.2.3"
//
// A binary built without the stamp (go install, go run) falls back to the
// module version Go recorded in the binary, and a tree built from a checkout
// without either says "dev".
package version

import "runtime/debug"

// Version is set at link time by the release build. Empty means unstamped.
var Version = ""

// String returns the version to show a person: the stamp, else the module
// version, else "dev".
func String() string {
	info, _ := debug.ReadBuildInfo()
	return resolve(Version, info)
}

// resolve is the pure rule behind String.
func resolve(stamp string, info *debug.BuildInfo) string {
	if stamp != "" {
		return stamp
	}
	if info != nil {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "dev"
}

// Line is what `NAME version` and `NAME --version` print: "NAME VERSION"
// for a person at a terminal, the bare version otherwise, so a release
// script can compare `$(nibrunnerd version)` with a tag.
func Line(name string, terminal bool) string {
	if terminal {
		return name + " " + String()
	}
	return String()
}
