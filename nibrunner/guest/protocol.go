package guest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// The control channel carries one JSON object per line in each direction.
// Newline framing (JSON escapes newlines inside strings) lets either side
// resynchronise after a torn message: virtio-serial drops what the guest
// writes while no host is connected, and a daemon that restarts connects
// in the middle of the guest's stream. A reader skips a line it cannot
// decode instead of giving up on the channel.

// Kind names a message.
type Kind string

// Host → guest requests. Each carries an ID that the guest's Reply echoes.
const (
	KindPing Kind = "ping"
	// KindFreeze freezes the volume's filesystem (FIFREEZE) for at most
	// TimeoutMs of the guest's monotonic time (DefaultFreezeTimeoutMs when
	// 0), which stands still while the guest is paused or asleep; a volume
	// already frozen is refused (EBUSY). KindThaw thaws it, and succeeds on
	// a filesystem that is not frozen. Checkpoints freeze a running guest;
	// a sleep freezes it before the pause and the wake thaws it.
	KindFreeze   Kind = "freeze"
	KindThaw     Kind = "thaw"
	KindMeasure  Kind = "measure"
	KindShutdown Kind = "shutdown"
	// KindSetTime sets the guest's clock to UnixMs: microvm has no RTC, and
	// a guest restored from a snapshot wakes with the time it slept at.
	KindSetTime Kind = "set-time"
	// KindSetNetwork tells a guest woken from a snapshot its network now
	// (Network), which differs when it woke in another slot or on another
	// host from the one it slept on: the init moves
	// eth0 to the new address, routes through the new gateway, forgets the
	// old host's neighbours and names the new name servers. An init of a
	// build before it answers an unknown request, and the host boots the
	// app cold instead.
	KindSetNetwork Kind = "set-network"
	// KindExec carries one exec session frame (package execwire) in Frame,
	// in either direction. It has no ID and no reply: the frames are the
	// session's own protocol.
	KindExec Kind = "exec"
)

// DefaultFreezeTimeoutMs bounds a freeze request that names no bound.
const DefaultFreezeTimeoutMs = 10000

// Guest → host messages.
const (
	// KindReply answers a request by ID.
	KindReply Kind = "reply"
	// KindReady: the init has stacked the root and is about to start the
	// tenant for the first time.
	KindReady Kind = "ready"
	// KindStarted: the tenant process started (PID, Restarts so far).
	KindStarted Kind = "started"
	// KindExited: the tenant process ended with ExitCode (128+signal for a
	// signal).
	KindExited Kind = "exited"
	// KindGaveUp: the restart policy is spent; the guest powers off next.
	KindGaveUp Kind = "gave-up"
	// KindLog: Data is a chunk of the tenant's Stream (stdout or stderr).
	KindLog Kind = "log"
	// KindFailed: the init could not set the guest up; Error says why and
	// the guest powers off next.
	KindFailed Kind = "failed"
)

// Message is one line on the control channel. Fields beyond Kind are set
// per kind and omitted otherwise.
type Message struct {
	Kind        Kind         `json:"kind"`
	ID          uint64       `json:"id,omitempty"`
	Error       string       `json:"error,omitempty"`
	PID         int          `json:"pid,omitempty"`
	Restarts    int          `json:"restarts,omitempty"`
	ExitCode    *int         `json:"exitCode,omitempty"`
	Stream      string       `json:"stream,omitempty"`
	Data        string       `json:"data,omitempty"`
	Measurement *Measurement `json:"measurement,omitempty"`
	UnixMs      int64        `json:"unixMs,omitempty"`
	// TimeoutMs bounds a freeze: the init thaws by itself once it has
	// passed without a thaw, so a host that dies mid-checkpoint cannot
	// leave the tenant's writes stuck.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Network is a KindSetNetwork request's network.
	Network *Network `json:"network,omitempty"`
	// Frame is a KindExec message's execwire frame.
	Frame []byte `json:"frame,omitempty"`
}

// Network is a guest's network as the kernel command line's ParamIP,
// ParamGateway and ParamDNS carry it at boot.
type Network struct {
	IP      string `json:"ip"`                // address with prefix, e.g. 10.201.0.2/30
	Gateway string `json:"gateway,omitempty"` // the host's end
	DNS     string `json:"dns,omitempty"`     // name servers, comma-separated
}

// Measurement is the guest's view of its resources, sent in reply to a
// measure request. Counters are cumulative since the guest booted.
type Measurement struct {
	MemoryTotalBytes     uint64 `json:"memoryTotalBytes"`
	MemoryAvailableBytes uint64 `json:"memoryAvailableBytes"`
	CPUTimeMs            uint64 `json:"cpuTimeMs"`
	RxBytes              uint64 `json:"rxBytes"`
	TxBytes              uint64 `json:"txBytes"`
	UptimeMs             uint64 `json:"uptimeMs"`
}

// MaxLine bounds one message; a longer line is skipped as garbage.
const MaxLine = 1 << 20

// Encoder writes messages; safe for concurrent use.
type Encoder struct {
	mu sync.Mutex
	w  io.Writer
}

// NewEncoder writes messages to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Send writes m as one line in one Write call, so that concurrent senders
// never interleave inside a message.
func (e *Encoder) Send(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", m.Kind, err)
	}
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(b); err != nil {
		return fmt.Errorf("send %s message: %w", m.Kind, err)
	}
	return nil
}

// Decoder reads messages, skipping lines that are not one.
type Decoder struct {
	r *bufio.Reader
}

// NewDecoder reads messages from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next well-formed message. A torn or oversize line is
// skipped; io.EOF (or the reader's error) ends the stream.
func (d *Decoder) Next() (Message, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return Message{}, err
		}
		var m Message
		if json.Unmarshal(line, &m) == nil && m.Kind != "" {
			return m, nil
		}
	}
}

// readLine returns one line without its newline; an oversize line is
// consumed and reported as an empty line (which Next then skips).
func (d *Decoder) readLine() ([]byte, error) {
	var buf []byte
	for {
		frag, err := d.r.ReadSlice('\n')
		if len(buf)+len(frag) <= MaxLine {
			buf = append(buf, frag...)
		} else {
			// Too long to be a message: drain the rest of the line.
			for err == bufio.ErrBufferFull {
				_, err = d.r.ReadSlice('\n')
			}
			if err != nil {
				return nil, err
			}
			return []byte{}, nil
		}
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(buf) > 0:
			// A last line without a newline is torn: drop it.
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}
