package nns

import (
	"context"
	"errors"
	"testing"

	"alpnib.dev/ic/principal"
)

// replyCaller answers every query with reply (or err) and records the method.
type replyCaller struct {
	reply  []byte
	err    error
	method string
}

func (c *replyCaller) Query(_ context.Context, _ principal.Principal, method string, _ []byte) ([]byte, error) {
	c.method = method
	return c.reply, c.err
}

func (c *replyCaller) Call(context.Context, principal.Principal, string, []byte) ([]byte, error) {
	return nil, errors.New("no update calls here")
}

func TestGetLatestVersionDecodesTheProtobufReply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply []byte
		want  uint64
	}{
		{"version 300 (two-byte varint)", []byte{0x08, 0xac, 0x02}, 300},
		{"an empty reply is version 0", nil, 0},
		{"unknown fields are skipped", []byte{0x12, 0x01, 0xff, 0x08, 0x07}, 7},
	} {
		c := &replyCaller{reply: tc.reply}
		got, err := RegistryClient{Caller: c}.GetLatestVersion(context.Background())
		if err != nil || got != tc.want || c.method != "get_latest_version" {
			t.Errorf("%s: got %d, %v via %q", tc.name, got, err, c.method)
		}
	}
	if _, err := (RegistryClient{Caller: &replyCaller{reply: []byte{0x08}}}).GetLatestVersion(context.Background()); err == nil {
		t.Error("a truncated varint decoded without error")
	}
}
