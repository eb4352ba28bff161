package proxy

import (
	"errors"
	"iter"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The HTTP/1 path's event loop. Each client connection is still served
// by straight-line code (serveConn, serveH1), but that code runs as a
// coroutine (iter.Pull) driven by one goroutine that waits on epoll for
// every connection at once, as nginx's worker does: a socket is read
// only once epoll says it has bytes, and a connection whose read or
// write would wait hands the loop back (a coroutine switch, not a trip
// through the scheduler and its other threads). So a request costs about
// two reads and two writes, the loop's epoll_wait is shared by every
// connection ready at once, and the proxy's HTTP/1 work runs on one
// thread instead of waking a second P for each ready connection
// (docs/bench.md, issue 41).
//
// A coroutine must never wait on anything but its loopConns' readiness:
// waiting on a channel or a lock held across a wait would stall every
// connection of the loop. Where the path may wait otherwise (a wake, a
// place among an app's connections, HTTP/2, an upgraded stream), it
// leaves the loop first (task.leave): its connections become ordinary
// runtime-polled ones, and a goroutine of its own drives it to its end.

// loop is one epoll instance and the coroutines it drives. Its fields
// below mu are the loop goroutine's alone (coroutines run on its behalf).
type loop struct {
	ep, efd int

	mu      sync.Mutex
	queued  []*task     // to start, under mu
	closing []*loopConn // to close, under mu
	stopped bool        // under mu: run returns once no task is left
	done    bool        // under mu: run returned; closes happen at once
	kicked  bool        // under mu: efd was written since the loop last read it

	conns  []*loopConn // by index, as epoll reports them
	free   []uint32
	timers timerHeap
	tasks  int // tasks started and not ended
	cur    *task
	// now is the time the loop's last epoll_wait returned: the clock of
	// its tasks (loopConn.clock), read once a poll instead of once or
	// more a read, a write and an access log line, as nginx's worker
	// reads the time once an event loop iteration (ngx_time_update,
	// docs/decisions.md).
	now time.Time
	// scheduled is when the loop last went through the runtime's
	// scheduler.
	scheduled time.Time
	events    [512]unix.EpollEvent // as many as nginx asks epoll_wait for
	ready     []*loopConn          // the batch's connections with a task
	again     []*task              // tasks that gave way, to resume after the next poll
	spare     []*task              // again's other buffer
}

// gosched is how often the loop passes through the scheduler: half the
// 10 ms after which the runtime's monitor preempts a goroutine that has
// not (runtime/proc.go, forcePreemptNS), so that a long batch still
// passes first. No more often: each Gosched wakes an idle thread
// (goschedImpl's wakep), which may take the loop to another thread; at
// once a millisecond that was four in five of the proxy's futex calls
// and a quarter of its context switches (docs/bench.md).
const gosched = 5 * time.Millisecond

// efdIndex marks the eventfd's events.
const efdIndex = -1

func newLoop() (*loop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: efdIndex}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		unix.Close(ep)
		unix.Close(efd)
		return nil, err
	}
	return &loop{ep: ep, efd: efd}, nil
}

// kick wakes the loop's epoll_wait; call with mu held.
func (l *loop) kick() {
	if l.kicked {
		return
	}
	l.kicked = true
	var one = [8]byte{1}
	_, _ = unix.Write(l.efd, one[:])
}

// start runs f as a coroutine of the loop.
func (l *loop) start(f func(t *task)) {
	t := &task{l: l, hi: -1}
	t.next, t.stop = iter.Pull(func(yield func(struct{}) bool) {
		t.yield = yield
		f(t)
	})
	l.mu.Lock()
	l.queued = append(l.queued, t)
	l.kick()
	l.mu.Unlock()
}

// stop makes run return once every task has ended.
func (l *loop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.kick()
	l.mu.Unlock()
}

// run drives the loop's coroutines until stop, then closes it.
func (l *loop) run() {
	defer l.close()
	l.now = time.Now()
	for {
		l.mu.Lock()
		queued, stopped := l.queued, l.stopped
		l.queued, l.kicked = nil, false
		l.mu.Unlock()
		l.closeQueued()
		for i, t := range queued {
			queued[i] = nil
			l.tasks++
			l.resume(t)
		}
		if stopped && l.tasks == 0 {
			return
		}
		if l.now.Sub(l.scheduled) > gosched {
			// Through the scheduler now and then: coroutine switches and
			// system calls do not count as scheduling, so a loop that never
			// passes through it looks like one goroutine running for ever,
			// and the runtime's monitor preempts it every 10 ms and then
			// wakes fifty times a millisecond (perf: 3.5% of the proxy's
			// samples were that monitor's sleeps; docs/bench.md).
			runtime.Gosched()
			l.scheduled = l.now
		}
		wait := -1
		switch {
		case len(l.again) > 0:
			wait = 0
		case len(l.timers) > 0:
			wait = max(0, int((time.Until(l.timers[0].at)+time.Millisecond-1)/time.Millisecond))
		}
		n, err := unix.EpollWait(l.ep, l.events[:], wait)
		l.now = time.Now()
		if err != nil && !errors.Is(err, unix.EINTR) {
			panic("proxy: epoll_wait: " + err.Error()) // EBADF or EFAULT: a bug, not a condition
		}
		// Every edge of the batch is noted before any task runs, so that a
		// task taking an idle app connection from the pool knows of bytes
		// or a close that came to it while it was idle (bconn.quiet).
		l.ready = l.ready[:0]
		for i := range max(n, 0) {
			ev := l.events[i]
			if ev.Fd == efdIndex {
				var b [8]byte
				_, _ = unix.Read(l.efd, b[:])
				continue
			}
			idx := uint32(ev.Fd)
			if int(idx) >= len(l.conns) {
				continue
			}
			c := l.conns[idx]
			if c == nil || c.gen != uint32(ev.Pad) {
				continue
			}
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.eof = true
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.rready.Store(true)
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.wready = true
			}
			if c.task != nil {
				l.ready = append(l.ready, c)
			}
		}
		for i, c := range l.ready {
			l.ready[i] = nil
			if t := c.task; t != nil && t.on == c && (t.out && c.wready || !t.out && c.rready.Load()) {
				l.resume(t)
			}
		}
		// The tasks that gave way (task.giveWay) go on, once every ready
		// connection had its turn.
		again := l.again
		l.again = l.spare[:0]
		for i, t := range again {
			again[i] = nil
			l.resume(t)
		}
		l.spare = again[:0]
		if len(l.timers) > 0 {
			// The deadlines that passed by the poll's time; those that pass
			// while its batch runs go at the next poll, as nginx's timers do.
			for len(l.timers) > 0 && !l.timers[0].at.After(l.now) {
				t := l.timers.pop()
				switch {
				case t.on == nil || t.due.IsZero():
					// An entry an earlier wait left (task.wait).
				case t.due.After(l.now):
					// It waits to a later deadline than the entry's.
					t.at = t.due
					l.timers.push(t)
				default:
					t.timedOut = true
					l.resume(t)
				}
			}
		}
	}
}

// close closes the loop, and from now on each connection of it at once.
func (l *loop) close() {
	l.mu.Lock()
	l.done = true
	closing := l.closing
	l.closing = nil
	l.mu.Unlock()
	for _, c := range closing {
		unix.Close(c.fd)
	}
	unix.Close(l.ep)
	unix.Close(l.efd)
}

// closeQueued closes the descriptors of the connections closed since.
func (l *loop) closeQueued() {
	l.mu.Lock()
	closing := l.closing
	l.closing = nil
	l.mu.Unlock()
	for _, c := range closing {
		unix.Close(c.fd)
		if int(c.idx) < len(l.conns) && l.conns[c.idx] == c {
			l.conns[c.idx] = nil
			l.free = append(l.free, c.idx)
		}
		if t := c.task; t != nil && t.on == c {
			// Closed from elsewhere while its task waited on it: the wait
			// ends, and the task finds it closed.
			l.resume(t)
		}
	}
}

// resume runs t until it waits again, leaves or ends.
func (l *loop) resume(t *task) {
	l.cur = t
	t.ops = 0
	_, more := t.next()
	l.cur = nil
	if (!more || t.left) && t.hi >= 0 {
		l.timers.remove(t)
	}
	switch {
	case !more:
		l.tasks--
	case t.left:
		l.tasks--
		// Its connections are the runtime's now: a goroutine of its own
		// drives it to its end.
		go func() {
			for {
				if _, more := t.next(); !more {
					return
				}
			}
		}()
	}
}

// add registers c's descriptor with the loop.
func (l *loop) add(c *loopConn) error {
	if n := len(l.free); n > 0 {
		c.idx = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		c.idx = uint32(len(l.conns))
		l.conns = append(l.conns, nil)
	}
	c.gen++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.idx), Pad: int32(c.gen)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		l.free = append(l.free, c.idx)
		return err
	}
	l.conns[c.idx] = c
	return nil
}

// task is one coroutine of the loop: a client connection being served.
type task struct {
	l     *loop
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool

	on       *loopConn // the connection it waits on, nil when running
	out      bool      // it waits to write (else to read)
	timedOut bool      // the wait ended at its deadline
	left     bool      // it left the loop (leave)

	due time.Time // its wait's deadline; zero while it runs or waits without one
	at  time.Time // its entry's time, while in the timer heap
	hi  int       // its index in the timer heap, -1 when not in it

	ops int // reads and writes since it was last resumed
}

// opsPerTurn is how many reads and writes a task makes before it gives
// way: a request takes four or five, and a stream whose two sockets are
// always ready (a large answer between a fast app and a fast client)
// would otherwise keep every other connection of its loop waiting.
const opsPerTurn = 64

// didIO counts one read or write, and gives way when the task's turn is
// over.
func (t *task) didIO() {
	if t.ops++; t.ops >= opsPerTurn {
		t.giveWay()
	}
}

// giveWay hands the loop back until the connections ready now had their
// turn.
func (t *task) giveWay() {
	t.l.again = append(t.l.again, t)
	t.yield(struct{}{})
}

// wait hands the loop back until c is ready to read (or write, with
// out), or until deadline (zero: none); false when the deadline came
// first.
//
// A task keeps its entry in the timer heap from one wait to the next, as
// nginx keeps an event's timer when its new time is close to the old
// (ngx_event_add_timer, docs/decisions.md): a deadline earlier than the
// entry's moves it, a later one leaves it, and when the entry's time
// comes the loop finds the task waiting to a later deadline and puts it
// back at that one. Most waits then cost the heap nothing: a kept-alive
// connection's deadlines move by whole requests while its entry stays.
func (t *task) wait(c *loopConn, out bool, deadline time.Time) bool {
	t.on, t.out, t.timedOut, t.due = c, out, false, deadline
	switch {
	case deadline.IsZero():
	case t.hi < 0:
		t.at = deadline
		t.l.timers.push(t)
	case deadline.Before(t.at):
		t.at = deadline
		t.l.timers.up(t.hi)
	}
	t.yield(struct{}{})
	t.on, t.due = nil, time.Time{}
	return !t.timedOut
}

// leave takes the task out of the loop: cs (its connections in use)
// become runtime-polled, and the rest of the task runs on a goroutine of
// its own. A task leaves before anything that may wait on something
// other than its sockets.
func (t *task) leave(cs ...*loopConn) {
	if t == nil || t.left {
		return
	}
	for _, c := range cs {
		if c != nil {
			c.detach()
		}
	}
	t.left = true
	t.yield(struct{}{})
}

// timerHeap is the tasks waiting with a deadline, soonest first.
type timerHeap []*task

func (h *timerHeap) push(t *task) {
	t.hi = len(*h)
	*h = append(*h, t)
	h.up(t.hi)
}

func (h *timerHeap) pop() *task {
	t := (*h)[0]
	h.remove(t)
	return t
}

func (h *timerHeap) remove(t *task) {
	s := *h
	i, last := t.hi, len(s)-1
	if i != last {
		s[i] = s[last]
		s[i].hi = i
	}
	s[last] = nil
	*h = s[:last]
	t.hi = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].at.Before(h[p].at) {
			return
		}
		h[i], h[p] = h[p], h[i]
		h[i].hi, h[p].hi = i, p
		i = p
	}
}

func (h timerHeap) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l].at.Before(h[m].at) {
			m = l
		}
		if r := l + 1; r < len(h) && h[r].at.Before(h[m].at) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		h[i].hi, h[m].hi = i, m
		i = m
	}
}
