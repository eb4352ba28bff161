package guest

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
)

func TestAConfigSurvivesTheTripThroughADrive(t *testing.T) {
	c := Config{
		AppID: "shop", DeploymentID: "d1", Layers: 2, Program: "/app/server",
		Args: []string{"-v", "line\nbreak"}, WorkingDirectory: "/data",
		Environment: map[string]string{"BIG": strings.Repeat("x", 32768)},
		HTTPPort:    8080, Hostname: "shop.example.com",
		Restart: RestartPolicy{MaxRestarts: 3, InitialBackoffMs: 100, MaxBackoffMs: 1000, BackoffFactor: 2, ResetAfterMs: 60000},
	}
	b, err := EncodeDrive(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%512 != 0 {
		t.Fatalf("drive is %d bytes, not whole sectors", len(b))
	}
	got, err := DecodeDrive(append(b, make([]byte, 4096)...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("decoded %+v, want %+v", got, c)
	}
}

func TestADriveWithoutTheMagicIsNotAConfigDrive(t *testing.T) {
	if _, err := DecodeDrive([]byte("hsqs....")); err != ErrNotConfigDrive {
		t.Fatalf("err = %v, want ErrNotConfigDrive", err)
	}
	b, _ := EncodeDrive(Config{AppID: "a"})
	if _, err := DecodeDrive(b[:len(configMagic)+6]); err == nil {
		t.Fatal("a truncated drive decoded")
	}
}

func TestTheRestartDelayGrowsByTheFactorUpToTheMaximum(t *testing.T) {
	p := RestartPolicy{InitialBackoffMs: 100, MaxBackoffMs: 1000, BackoffFactor: 3}
	want := []time.Duration{100, 300, 900, 1000, 1000}
	for i, w := range want {
		if got := p.Delay(i + 1); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

func TestThePlatformVariablesReplaceTheTenantsAndFillItsReferences(t *testing.T) {
	c := Config{
		HTTPPort: 3000, Hostname: "a.example.com", WorkingDirectory: "/srv",
		Environment: map[string]string{
			"PORT":     "9999",
			"URL":      "https://${NIBRUN_HOSTNAME}:$NIBRUN_HTTP_PORT/x",
			"KEEP":     "$HOME and ${OTHER} and $NIBRUN_HTTP_PORTS and $",
			"PATH":     "/opt/bin",
			"NIBRUN_X": "y",
		},
	}
	got := c.Environ()
	want := []string{
		"KEEP=$HOME and ${OTHER} and $NIBRUN_HTTP_PORTS and $",
		"NIBRUN_DATA_DIR=/srv",
		"NIBRUN_HOSTNAME=a.example.com",
		"NIBRUN_HTTP_PORT=3000",
		"NIBRUN_X=y",
		"PATH=/opt/bin",
		"PORT=3000",
		"URL=https://a.example.com:3000/x",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Environ() =\n%q\nwant\n%q", got, want)
	}
}

func TestMessagesCrossAPipeAndATornLineIsSkipped(t *testing.T) {
	r, w := io.Pipe()
	enc := NewEncoder(w)
	code := 137
	go func() {
		_, _ = w.Write([]byte(`{"kind":"log","da` + "\n")) // torn by a reconnect
		_, _ = w.Write([]byte("not json at all\n"))
		_ = enc.Send(Message{Kind: KindLog, Stream: "stdout", Data: "hello\nworld"})
		_ = enc.Send(Message{Kind: KindExited, ExitCode: &code})
		_ = enc.Send(Message{Kind: KindReply, ID: 7, Measurement: &Measurement{MemoryTotalBytes: 1 << 20}})
		_, _ = w.Write([]byte(`{"kind":"exi`)) // torn at the end
		_ = w.Close()
	}()
	dec := NewDecoder(r)
	var got []Message
	for {
		m, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("got %d messages, want 3: %+v", len(got), got)
	}
	if got[0].Data != "hello\nworld" || *got[1].ExitCode != 137 || got[2].ID != 7 || got[2].Measurement.MemoryTotalBytes != 1<<20 {
		t.Fatalf("messages changed in transit: %+v", got)
	}
}

func TestAnOversizeLineIsSkippedAndTheNextMessageRead(t *testing.T) {
	in := `{"kind":"log","data":"` + strings.Repeat("a", MaxLine+10) + "\"}\n" + `{"kind":"ready"}` + "\n"
	dec := NewDecoder(strings.NewReader(in))
	m, err := dec.Next()
	if err != nil || m.Kind != KindReady {
		t.Fatalf("Next() = %+v, %v; want the ready message", m, err)
	}
}

// The init restarts the tenant process by the same reading of the policy
// as the host restarts its VM: one function, nibrunner/backoff.Delay.
func TestTheGuestAndTheHostWaitTheSameBeforeEachRestart(t *testing.T) {
	for _, p := range []RestartPolicy{
		{InitialBackoffMs: 100, MaxBackoffMs: 1000, BackoffFactor: 3},
		{InitialBackoffMs: 1000, MaxBackoffMs: 0, BackoffFactor: 2},
		{InitialBackoffMs: 5000, MaxBackoffMs: 800, BackoffFactor: 2},
		{InitialBackoffMs: 250, MaxBackoffMs: 60000, BackoffFactor: 0.5},
		{InitialBackoffMs: 1, MaxBackoffMs: 3600000, BackoffFactor: 1e300},
	} {
		host := backoff.Policy{Initial: time.Duration(p.InitialBackoffMs) * time.Millisecond, Max: time.Duration(p.MaxBackoffMs) * time.Millisecond, Factor: p.BackoffFactor}
		for _, n := range []int{1, 2, 3, 10, 100} {
			if g, h := p.Delay(n), host.Delay(n); g != h {
				t.Errorf("%+v: restart %d waits %v in the guest and %v on the host", p, n, g, h)
			}
		}
	}
	if d := (RestartPolicy{InitialBackoffMs: 1000, MaxBackoffMs: 0, BackoffFactor: 2}).Delay(3); d != 0 {
		t.Errorf("maxBackoffMs 0 waits %v in the guest, want 0", d)
	}
}
