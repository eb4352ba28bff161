package state

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

func TestASecondClaimOnTheStateIsRefusedNamingTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	first, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path)
	var locked *LockedError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d on ", os.Getpid())) || !strings.Contains(err.Error(), "state.json.lock") {
		t.Fatalf("second claim: %v", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(path)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	again.Release()
	if err := again.Release(); err != nil {
		t.Fatalf("a second release: %v", err)
	}
}

func TestALockLeftByAProcessThatIsGoneIsTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("pid %d on %s since 2026-11-29T12:00:00Z\n", gone.Process.Pid, host)
	if err := os.WriteFile(LockPath(path), []byte(holder), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("a dead holder's lock was not taken over: %v", err)
	}
	l.Release()
}

func TestALockHeldOnAnotherHostOrByALiveProcessIsNeverTakenOver(t *testing.T) {
	host, _ := os.Hostname()
	for _, holder := range []string{
		"pid 1 on some-other-host since 2026-11-29T12:00:00Z\n",
		fmt.Sprintf("pid %d on %s since 2026-11-29T12:00:00Z\n", os.Getpid(), host),
		"written by hand\n",
	} {
		path := filepath.Join(t.TempDir(), "state.json")
		os.WriteFile(LockPath(path), []byte(holder), 0o644)
		if _, err := Acquire(path); err == nil {
			t.Errorf("lock %q was taken over", holder)
		}
	}
}

func TestOnlyOneOfManyConcurrentClaimsHoldsTheStateAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var holders, most, won atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				l, err := Acquire(path)
				if err != nil {
					continue
				}
				won.Add(1)
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				holders.Add(-1)
				l.Release()
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 || won.Load() == 0 {
		t.Fatalf("%d claims won, at most %d held at once", won.Load(), most.Load())
	}
}

func TestUpdateEditsTheFileAsItIsNowNotAsItWasRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	// an apply records a proposal, then a status records its outcome
	if err := Update(path, func(s *State) (bool, error) {
		s.Proposals["q"] = &Proposal{Kind: "remove_nodes", ProposalID: 9, SubmittedAt: TimeOf(t0)}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := Update(path, func(s *State) (bool, error) {
		return s.Observe("q", StatusExecuted, t0), nil
	}); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil || s.Proposals["q"] == nil || s.Proposals["q"].Status != StatusExecuted {
		t.Fatalf("state after two updates: %+v, %v", s, err)
	}
	if _, err := os.Stat(LockPath(path)); !os.IsNotExist(err) {
		t.Fatalf("the lock outlived the update: %v", err)
	}
}

func TestUpdateRefusesWhileAnotherProcessHoldsTheState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	called := false
	err = Update(path, func(*State) (bool, error) { called = true; return true, nil })
	var locked *LockedError
	if !errors.As(err, &locked) || called {
		t.Fatalf("Update under a held lock: %v (change called: %v)", err, called)
	}
}

func TestLockingAStateFileInAFolderThatDoesNotExistSaysWhatToDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "state.json")
	_, err := Acquire(path)
	if err == nil || !strings.Contains(err.Error(), "the folder of "+path+" does not exist") || !strings.Contains(err.Error(), "point --state at") {
		t.Fatalf("Acquire: %v", err)
	}
}

func TestCheckoutsWhoseStateJSONLinksToOneFileShareItsLock(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared", "state.json")
	if err := os.MkdirAll(filepath.Dir(shared), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := New().Save(shared); err != nil {
		t.Fatal(err)
	}
	checkout := func(name string) string {
		p := filepath.Join(root, name, "state.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(shared, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := checkout("a"), checkout("b")
	var inner error
	err := Update(a, func(s *State) (bool, error) {
		inner = Update(b, func(s *State) (bool, error) { return true, s.Record("from-b", &Proposal{Kind: "k", ProposalID: 2}) })
		return true, s.Record("from-a", &Proposal{Kind: "k", ProposalID: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	var locked *LockedError
	if !errors.As(inner, &locked) {
		t.Fatalf("checkout b updated the shared state.json while checkout a held it (%v): one of the two records would be lost", inner)
	}
	s, err := Load(shared)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Proposals["from-a"]; !ok {
		t.Fatalf("the shared file lost checkout a's record: %v", s.Proposals)
	}
}

func TestExitedReadsTheStateAfterTheCommandName(t *testing.T) {
	for _, c := range []struct {
		stat string
		want bool
	}{
		{"1234 (alp) Z 1 1234 1234 0 -1", true},
		{"1234 (alp) X 1 1234 1234 0 -1", true},
		{"1234 (alp) S 1 1234 1234 0 -1", false},
		{"1234 (alp) R 1 1234 1234 0 -1", false},
		{"1234 (a) Z (b) S 1 1234", false}, // a command name holding ") Z ("
		{"1234 (a) S (b) Z 1 1234", true},
		{"garbage", false},
		{"1234 (alp)", false},
	} {
		if got := exited([]byte(c.stat)); got != c.want {
			t.Errorf("exited(%q) = %v, want %v", c.stat, got, c.want)
		}
	}
}

func TestALockHeldByAZombieIsTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatalf("start a child: %v", err)
	}
	pid := child.Process.Pid
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Wait for it to exit without reaping it: it stays a zombie of this
	// process until child.Wait below.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	defer child.Wait()
	if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(stat), ") Z ") {
		t.Fatalf("the child is not a zombie: %q", stat)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("pid %d on %s since 2026-11-29T12:00:00Z\n", pid, host)
	if err := os.WriteFile(LockPath(path), []byte(holder), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("a zombie holder's lock was not taken over: %v", err)
	}
	l.Release()
}
