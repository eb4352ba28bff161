package slot

import (
	"reflect"
	"testing"
)

func TestASlotNamesItsPortsAddressesAndTap(t *testing.T) {
	n := Network(3)
	if n.HostPort != 21024 || n.Tap != "nbr3" || n.HostIPv4.String() != "10.201.0.13" || n.GuestIPv4.String() != "10.201.0.14" || n.PrefixLen != 30 {
		t.Fatalf("slot 3 = %+v", n)
	}
	n = Network(100)
	if n.HostIPv4.String() != "10.201.1.145" || n.GuestIPv4.String() != "10.201.1.146" {
		t.Fatalf("slot 100 = %+v", n)
	}
	if last := HostPort(Max-1) + PortsPerSlot - 1; last > 65535 {
		t.Fatalf("the last slot's ports end at %d", last)
	}
}

func TestNewAppsTakeTheLowestFreeSlotsAndExistingOnesKeepTheirs(t *testing.T) {
	added, full := Assign(map[string]int{"b": 0, "d": 2}, []string{"a", "b", "c", "d"}, 10)
	if want := map[string]int{"a": 1, "c": 3}; !reflect.DeepEqual(added, want) || full != nil {
		t.Fatalf("added %v full %v", added, full)
	}
}

func TestAppsBeyondMaxAppsFindNoSlot(t *testing.T) {
	added, full := Assign(map[string]int{"a": 0}, []string{"a", "b", "c"}, 2)
	if !reflect.DeepEqual(added, map[string]int{"b": 1}) || !reflect.DeepEqual(full, []string{"c"}) {
		t.Fatalf("added %v full %v", added, full)
	}
}

func TestTheFirstSlotWithAHostPortInTheEphemeralRangeIsTheOneReachingIt(t *testing.T) {
	// Slot 1470 owns 32760–32767; 1471 starts at 32768.
	if n, ok := FirstWithPortIn(Max, 32768, 60999); !ok || n != 1471 {
		t.Fatalf("first slot in 32768–60999: %d, %v; want 1471", n, ok)
	}
	// A range starting inside a slot's ports counts that slot.
	if n, ok := FirstWithPortIn(Max, 32765, 60999); !ok || n != 1470 {
		t.Fatalf("first slot in 32765–60999: %d, %v; want 1470", n, ok)
	}
	if _, ok := FirstWithPortIn(1471, 32768, 60999); ok {
		t.Fatal("max_apps 1471 (slots 0–1470) reaches the ephemeral range")
	}
	if n, ok := FirstWithPortIn(1472, 32768, 60999); !ok || n != 1471 {
		t.Fatalf("max_apps 1472: %d, %v", n, ok)
	}
}
