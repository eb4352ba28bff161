package desired

import (
	"fmt"
	"sort"
	"strings"
)

// HostLimits is what this host can carry for an instance, from its
// config.toml: whether it routes hostnames ([proxy.http]), whether it
// carries raw ports ([proxy.raw]) and how many per guest.
type HostLimits struct {
	HTTPProxy        bool
	RawProxy         bool
	MaxPortsPerGuest int
	// NoImages: the host has no [images] section, so it pulls no image
	// layer (the zero value pulls them).
	NoImages bool
}

// InstanceProblems returns, per app, why this host cannot run an instance
// the document itself may ask for: more ports than the host carries, ports
// on a host with no raw proxy, hostnames on a host with no HTTP proxy, an
// image layer on a host that pulls none, an environment value holding a
// newline, CR or NUL. The spec charges these
// to the instance (it is failed naming the reason), not to the document,
// which is still accepted; so is asking for no memory or no vCPU, which
// the seed does not bound. Apps with no problem are absent from the map.
func InstanceProblems(doc *HostDesiredState, limits HostLimits) map[AppId]string {
	out := map[AppId]string{}
	for _, in := range doc.Instances {
		var why []string
		// The VMM would boot a 0 with a default of its own while memory
		// admission counted nothing for it.
		if in.Config.Resources.MemoryMib == 0 {
			why = append(why, "config.resources.memoryMib is 0, and a guest cannot boot without memory: give it the MiB the app needs (128 or more)")
		}
		if in.Config.Resources.VcpuCount == 0 {
			why = append(why, "config.resources.vcpuCount is 0, and a guest cannot run without a CPU: give it 1 or more")
		}
		if n := len(in.Config.Ports); n > 0 {
			switch {
			case !limits.RawProxy:
				why = append(why, fmt.Sprintf("it asks for %s beside HTTP but this host has no [proxy.raw] to carry them", plural(n, "port")))
			case n > limits.MaxPortsPerGuest:
				why = append(why, fmt.Sprintf("it asks for %s beside HTTP but this host carries at most %d per guest ([proxy.raw] max_ports_per_guest)", plural(n, "port"), limits.MaxPortsPerGuest))
			}
		}
		if len(in.Hostnames) > 0 && !limits.HTTPProxy {
			why = append(why, fmt.Sprintf("it names %s (%s) but this host has no [proxy.http] to route them", plural(len(in.Hostnames), "hostname"), in.Hostnames[0].Hostname))
		}
		if limits.NoImages {
			for i, l := range in.Layers {
				if l.Kind == LayerImage {
					why = append(why, fmt.Sprintf("layers[%d] is an image but this host pulls none: give its config.toml an [images] section (an empty one pulls anonymously)", i))
					break
				}
			}
		}
		keys := make([]string, 0, len(in.Config.Command.Environment))
		for k := range in.Config.Command.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.ContainsAny(string(in.Config.Command.Environment[k]), "\n\r\x00") {
				why = append(why, fmt.Sprintf("environment variable %s holds a newline, carriage return or NUL, which the guest cannot pass to the app", k))
			}
		}
		if len(why) > 0 {
			out[in.AppId] = strings.Join(why, "; ")
		}
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
