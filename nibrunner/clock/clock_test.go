package clock

import (
	"testing"
	"time"
)

func TestManualTimersFireWhenTheClockPassesThem(t *testing.T) {
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	m := NewManual(start)
	late, early := m.NewTimer(2*time.Second), m.NewTimer(time.Second)
	if n := m.Waiting(); n != 2 {
		t.Fatalf("%d timers wait, want 2", n)
	}
	m.Advance(999 * time.Millisecond)
	select {
	case <-early.C():
		t.Fatal("a 1 s timer fired at 999 ms")
	default:
	}
	m.Advance(time.Millisecond)
	if got := <-early.C(); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("the 1 s timer fired with %v", got)
	}
	select {
	case <-late.C():
		t.Fatal("the 2 s timer fired at 1 s")
	default:
	}
	if late.Stop() != true || late.Stop() != false {
		t.Fatal("Stop says whether the timer was waiting")
	}
	m.Advance(time.Hour)
	select {
	case <-late.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	late.Reset(time.Minute)
	m.Advance(time.Minute)
	<-late.C()
	if !m.Now().Equal(start.Add(time.Second + time.Hour + time.Minute)) {
		t.Fatalf("the clock reads %v", m.Now())
	}
}

func TestManualClockNeverGoesBackAndZeroTimersFireAtOnce(t *testing.T) {
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	m := NewManual(start)
	m.Set(start.Add(-time.Hour))
	if !m.Now().Equal(start) {
		t.Fatalf("Set moved the clock back to %v", m.Now())
	}
	armed := m.Armed()
	tm := m.NewTimer(0)
	<-armed
	<-tm.C()
	if Since(m, start.Add(-time.Second)) != time.Second || Until(m, start.Add(time.Second)) != time.Second {
		t.Fatal("Since and Until read the clock")
	}
}

func TestRealTimersFire(t *testing.T) {
	tm := Or(nil).NewTimer(time.Millisecond)
	<-tm.C()
	if tm.Stop() {
		t.Fatal("a fired timer stopped")
	}
}
