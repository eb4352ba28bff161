package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Host converges the host's whole guest network in one call: the sysctls
// checked, a tap for every slot, the nibrun table, and the taps of slots
// no longer held removed. It is what the daemon's network port wraps.
type Host struct {
	Firewall Firewall
	DeniedV4 []netip.Prefix
	DeniedV6 []netip.Prefix
	DNS      []netip.Addr // [network] dns_servers
}

// Apply makes the network match apps, which must list every app holding a
// slot — running or not — since a slot missing from it loses its tap.
func (h Host) Apply(ctx context.Context, apps []App) error {
	if wrong := CheckSysctls(HostSysctls); len(wrong) > 0 {
		return fmt.Errorf("the host is not set up to route guests' traffic: %s", strings.Join(wrong, "; "))
	}
	held := map[int]bool{}
	for _, a := range apps {
		if err := EnsureTap(a.Slot); err != nil {
			return fmt.Errorf("app %s: %w", a.AppID, err)
		}
		held[a.Slot] = true
	}
	if err := h.Firewall.Apply(ctx, Rules{Apps: apps, DeniedV4: h.DeniedV4, DeniedV6: h.DeniedV6, DNS: h.DNS}); err != nil {
		return err
	}
	slots, err := Taps()
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range slots {
		if !held[n] {
			errs = append(errs, RemoveTap(n))
		}
	}
	return errors.Join(errs...)
}
