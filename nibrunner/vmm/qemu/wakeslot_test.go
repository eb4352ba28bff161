package qemu

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/network"
)

// A snapshot's stamp names nothing of its slot: a guest that slept on slot
// 5's tap wakes on slot 6's, is told its new address, gateway and name
// servers, and answers there with the memory it slept with.
func TestAGuestWokenInAnotherSlotAnswersAtThatSlotsAddressWithItsMemory(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	const from, to = 5, 6
	spec := f.spec(t, "mover")
	spec.Slot, spec.Network = from, slotNetwork(from)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	defer v.Stop(context.Background(), spec.AppID)
	get := func(endpoint, path string) (string, error) {
		for {
			body, err := getOnThisThread(endpoint, path)
			if err == nil {
				return body, nil
			}
			if ctx.Err() != nil {
				return "", fmt.Errorf("the guest never answered %s at %s: %w", path, endpoint, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	var before, after string
	err := inNewNetns(func() error {
		for _, n := range []int{from, to} {
			if err := network.EnsureTap(n); err != nil {
				return err
			}
		}
		st, err := v.Start(ctx, spec)
		if err != nil {
			return err
		}
		if _, err := get(st.Endpoint, "/whoami"); err != nil {
			return err
		}
		for range 2 {
			if before, err = get(st.Endpoint, "/count"); err != nil {
				return err
			}
		}
		if err := v.Sleep(ctx, spec.AppID); err != nil {
			return err
		}
		spec.Slot, spec.Network = to, slotNetwork(to)
		if why := v.WakeMismatch(ctx, spec); why != "" {
			return fmt.Errorf("the snapshot does not fit another slot: %s", why)
		}
		if st, err = v.Wake(ctx, spec); err != nil {
			return err
		}
		if !st.Restored {
			return fmt.Errorf("the wake in slot %d booted cold: %s", to, st.WokenCold)
		}
		if want := fmt.Sprintf("%s:8080", network.GuestAddr(to).Addr()); st.Endpoint != want {
			return fmt.Errorf("endpoint %s, want %s", st.Endpoint, want)
		}
		after, err = get(st.Endpoint, "/count")
		return err
	})
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s\nmessages:\n%s", err, console(v, spec.AppID), logs.String())
	}
	if before != "2" || after != "3" {
		t.Errorf("the guest counted %s before its sleep and %s after its wake in another slot, want 2 then 3", before, after)
	}
	if !strings.Contains(console(v, spec.AppID), "eth0 "+network.GuestAddr(to).String()) {
		t.Errorf("the init did not report moving eth0 to %s:\n%s", network.GuestAddr(to), console(v, spec.AppID))
	}
}
