package qemu

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/guest"
)

// BenchmarkCheckpointFreezeOfARunningGuest checkpoints the 1 GiB volume of
// a running guest that rewrites files on it the whole time, the volume
// holding 200 MiB (50 files of 4 MiB of random bytes under /data): per
// checkpoint, how long the tenant's filesystem stays frozen (freeze
// request, sparse copy, thaw request) and the bytes the copy writes over
// the bytes the volume holds.
func BenchmarkCheckpointFreezeOfARunningGuest(b *testing.B) {
	testenv.RequireRoot(b)
	f := newFixture(b)
	tree := filepath.Join(f.dir, "tree")
	data := filepath.Join(tree, guest.VolumeUpperDir, "data")
	os.MkdirAll(data, 0o755)
	buf := make([]byte, 4<<20)
	for i := range 50 {
		rand.Read(buf)
		os.WriteFile(filepath.Join(data, fmt.Sprint(i)), buf, 0o644)
	}
	os.Remove(f.volume)
	if out, err := exec.Command(testenv.RequireCommand(b, "mke2fs"), "-q", "-F", "-t", "ext4", "-d", tree, f.volume, "1G").CombinedOutput(); err != nil {
		b.Fatalf("make the volume: %v\n%s", err, out)
	}
	v := newVMM(b, f.dir, nil)
	ctx := context.Background()
	spec := f.writerSpec(b, "bench")
	st := started(b, ctx, v, spec, nil)
	waitWriting(b, st.Endpoint, 20, 2*time.Minute)
	var frozen, worst time.Duration
	var written, used int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		img := filepath.Join(f.dir, "ckpt.img")
		snap, err := checkpoint.Snapshot(ctx, checkpoint.Volume{ID: "bench", Path: f.volume, Freezer: appFreezer{v, spec.AppID}}, img, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		frozen += snap.Frozen
		worst = max(worst, snap.Frozen)
		written, used = snap.Written, snap.Data
		b.StopTimer()
		os.Remove(img)
		b.StartTimer()
	}
	b.ReportMetric(float64(frozen.Milliseconds())/float64(b.N), "frozen-ms/op")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-frozen-ms")
	b.ReportMetric(float64(written)/(1<<20), "written-MiB")
	b.ReportMetric(float64(used)/(1<<20), "used-MiB")
}

// BenchmarkSleepFreeze measures what the volume's freeze adds to a sleep:
// per iteration one guest sleeps the old way (no freeze) and the new way
// (Sleep: freeze, then stop), in alternating order, each right after the
// tenant wrote a note of the sub-benchmark's size without fsync, and each
// woken again. It reports both sleeps' times and how often the volume file
// held the note while the app slept; the wake's thaw is one more control
// round trip, timed on the running guest.
func BenchmarkSleepFreeze(b *testing.B) {
	for _, size := range []int{4 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("note=%dKiB", size>>10), func(b *testing.B) { benchSleepFreeze(b, size) })
	}
}

func benchSleepFreeze(b *testing.B, size int) {
	testenv.RequireRoot(b)
	f := newFixture(b)
	v := newVMM(b, f.dir, nil)
	ctx := context.Background()
	spec := f.spec(b, "bench")
	st := started(b, ctx, v, spec, nil)
	get(b, st.Endpoint, "/count", 2*time.Minute)
	note := make([]byte, size)
	var took, held [2]time.Duration
	var onVolume [2]int
	var thaw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			freeze := (i+k)%2 == 1
			for j := range note {
				note[j] = 'a' + byte((i*2+k+j)%26)
			}
			noteWithin(b, st.Endpoint, string(note), 3*time.Minute)
			t0 := time.Now()
			if err := v.sleep(ctx, spec.AppID, freeze); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			n := 0
			if freeze {
				n = 1
			}
			took[n] += d
			held[n] = max(held[n], d)
			b.StopTimer()
			if volumeNoteOrEmpty(f.volume) == string(note) {
				onVolume[n]++
			}
			b.StartTimer()
			w, err := v.Wake(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			if st = w; !st.Restored {
				b.Fatal("wake booted cold")
			}
			get(b, st.Endpoint, "/count", time.Minute)
		}
		t0 := time.Now()
		if err := v.ThawVolume(ctx, spec.AppID); err != nil {
			b.Fatal(err)
		}
		thaw += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Milliseconds())/n, "old-sleep-ms")
	b.ReportMetric(float64(took[1].Milliseconds())/n, "frozen-sleep-ms")
	b.ReportMetric(float64(took[1].Milliseconds()-took[0].Milliseconds())/n, "freeze-adds-ms")
	b.ReportMetric(float64(held[0].Milliseconds()), "old-worst-ms")
	b.ReportMetric(float64(held[1].Milliseconds()), "frozen-worst-ms")
	b.ReportMetric(float64(onVolume[0])/n, "old-note-on-volume")
	b.ReportMetric(float64(onVolume[1])/n, "frozen-note-on-volume")
	b.ReportMetric(float64(thaw.Microseconds())/n/1000, "thaw-ms")
	b.Logf("accelerator %s, guest memory %d MiB", v.Version(), spec.MemoryMiB)
}

// volumeNoteOrEmpty is volumeNote for a benchmark that counts a missing
// note instead of failing on it.
func volumeNoteOrEmpty(volume string) string {
	out, err := exec.Command("debugfs", "-R", "cat /"+guest.VolumeUpperDir+"/data/note", volume).Output()
	if err != nil {
		return ""
	}
	return string(out)
}
