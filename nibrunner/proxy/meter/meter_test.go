package meter

import (
	"testing"
	"time"
)

func TestAMeterIsBusyWhileOpenAndRemembersTheLatestTraffic(t *testing.T) {
	var m Meter
	if last, busy := m.Activity(); !last.IsZero() || busy {
		t.Fatalf("a new meter says %v %v", last, busy)
	}
	t0 := time.Unix(1000, 0)
	m.Begin(t0)
	m.Touch(t0.Add(-time.Second)) // an older mark never moves it back
	if last, busy := m.Activity(); !last.Equal(t0) || !busy {
		t.Fatalf("open: %v %v", last, busy)
	}
	m.End(t0.Add(time.Minute))
	if last, busy := m.Activity(); !last.Equal(t0.Add(time.Minute)) || busy {
		t.Fatalf("closed: %v %v", last, busy)
	}
}

func TestMergedTrafficIsTheLatestOfAnyAndBusyWhenAnyIs(t *testing.T) {
	var http, raw Set
	t0 := time.Unix(1000, 0)
	http.Of("shop").Touch(t0)
	raw.Of("shop").Begin(t0.Add(-time.Hour))
	last, busy := Merged{&http, &raw}.Activity("shop")
	if !last.Equal(t0) || !busy {
		t.Fatalf("merged: %v %v", last, busy)
	}
	if last, busy := (Merged{&http, &raw}).Activity("nobody"); !last.IsZero() || busy {
		t.Fatalf("an app neither saw: %v %v", last, busy)
	}
	raw.Keep(func(string) bool { return false })
	if _, busy := raw.Activity("shop"); !busy {
		t.Fatal("Keep forgot a meter with a connection open")
	}
}
