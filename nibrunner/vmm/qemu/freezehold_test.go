package qemu

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/vmm"
)

// fakeInit answers a guest's control channel the way nibrun-init answers
// freezes and thaws: a freeze of a frozen volume is refused (EBUSY), and
// a thaw thaws whoever froze it.
type fakeInit struct {
	mu     sync.Mutex
	frozen bool
	thaws  int
}

func (f *fakeInit) isFrozen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen
}

func (f *fakeInit) thawCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thaws
}

func (f *fakeInit) serve(t *testing.T, l net.Listener) {
	c, err := l.Accept()
	if err != nil {
		return
	}
	t.Cleanup(func() { c.Close() })
	enc, dec := guest.NewEncoder(c), guest.NewDecoder(c)
	for {
		m, err := dec.Next()
		if err != nil {
			return
		}
		r := guest.Message{Kind: guest.KindReply, ID: m.ID}
		f.mu.Lock()
		switch m.Kind {
		case guest.KindFreeze:
			if f.frozen {
				r.Error = "ioctl on the volume: device or resource busy"
			}
			f.frozen = true
		case guest.KindThaw:
			f.frozen = false
			f.thaws++
		}
		f.mu.Unlock()
		_ = enc.Send(r)
	}
}

// guestWithFakeInit is a VMM holding one running guest, app, whose
// control channel is answered by the returned fake init.
func guestWithFakeInit(t *testing.T) (*VMM, *vmGuest, *fakeInit) {
	path := filepath.Join(t.TempDir(), "control.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	init := &fakeInit{}
	go init.serve(t, l)
	g := &vmGuest{done: make(chan struct{}), ctl: newControl(path, nil)}
	go g.ctl.run()
	t.Cleanup(g.ctl.close)
	return &VMM{guests: map[string]*vmGuest{"app": g}}, g, init
}

type volumeFreezer struct{ v *VMM }

func (f volumeFreezer) Freeze(ctx context.Context) error { return f.v.FreezeVolume(ctx, "app") }
func (f volumeFreezer) Thaw(ctx context.Context) error   { return f.v.ThawVolume(ctx, "app") }

func TestACheckpointDuringASleepsFreezeLeavesTheVolumeFrozenForTheSleep(t *testing.T) {
	v, g, init := guestWithFakeInit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := v.freezeForSleep(ctx, g); err != nil {
		t.Fatalf("the sleep's freeze: %v", err)
	}
	vol := filepath.Join(t.TempDir(), "volume.img")
	_, err := checkpoint.Snapshot(ctx, checkpoint.Volume{ID: "v", Path: vol, Freezer: volumeFreezer{v}}, vol+".copy", 5*time.Second)
	if !errors.Is(err, vmm.ErrFreezeRefused) {
		t.Fatalf("a checkpoint while the sleep holds the volume frozen: %v, want it refused (vmm.ErrFreezeRefused)", err)
	}
	if !init.isFrozen() || init.thawCount() != 0 {
		t.Fatalf("after the refused checkpoint the volume is frozen: %v, thawed %d times; the sleep's freeze must still hold", init.isFrozen(), init.thawCount())
	}
}

func TestASleepDuringACheckpointsFreezeIsRefusedAndLeavesTheCheckpointsFreeze(t *testing.T) {
	v, g, init := guestWithFakeInit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := v.FreezeVolume(ctx, "app"); err != nil {
		t.Fatalf("the checkpoint's freeze: %v", err)
	}
	if err := v.freezeForSleep(ctx, g); !errors.Is(err, ErrFreeze) || !errors.Is(err, vmm.ErrFreezeRefused) {
		t.Fatalf("a sleep while a checkpoint holds the volume frozen: %v, want ErrFreeze (refused)", err)
	}
	if !init.isFrozen() || init.thawCount() != 0 {
		t.Fatalf("after the refused sleep the volume is frozen: %v, thawed %d times; the checkpoint's freeze must still hold", init.isFrozen(), init.thawCount())
	}
	if err := v.ThawVolume(ctx, "app"); err != nil || init.isFrozen() {
		t.Fatalf("the checkpoint's thaw: %v, frozen after it: %v", err, init.isFrozen())
	}
	if err := v.freezeForSleep(ctx, g); err != nil {
		t.Fatalf("a sleep once the checkpoint thawed: %v, want its freeze to hold", err)
	}
}

func TestAFreezeTheGuestRefusedIsNotFollowedByAThawThatWouldEndAnother(t *testing.T) {
	v, _, init := guestWithFakeInit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init.mu.Lock()
	init.frozen = true // frozen by someone this process does not know of (a daemon before a restart)
	init.mu.Unlock()
	vol := filepath.Join(t.TempDir(), "volume.img")
	_, err := checkpoint.Snapshot(ctx, checkpoint.Volume{ID: "v", Path: vol, Freezer: volumeFreezer{v}}, vol+".copy", 5*time.Second)
	if !errors.Is(err, vmm.ErrFreezeRefused) {
		t.Fatalf("a checkpoint the guest refused to freeze for: %v, want vmm.ErrFreezeRefused", err)
	}
	if init.thawCount() != 0 {
		t.Fatalf("the refused checkpoint thawed the volume %d times", init.thawCount())
	}
	// The refusal released the hold: this process's next freeze is asked.
	init.mu.Lock()
	init.frozen = false
	init.mu.Unlock()
	if err := v.FreezeVolume(ctx, "app"); err != nil {
		t.Fatalf("a freeze after a refused one: %v", err)
	}
}
