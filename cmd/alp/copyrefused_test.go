package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/registrycopy"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
	"alpnib.dev/ic/principal"
)

// tampering is an endpoint whose get_certified_changes_since replies do not
// verify: one byte of a delta's value is changed after the network signed
// it.
type tampering struct{ *agent.Agent }

func (t tampering) Query(ctx context.Context, c principal.Principal, method string, arg []byte) ([]byte, error) {
	raw, err := t.Agent.Query(ctx, c, method, arg)
	if err != nil || method != "get_certified_changes_since" {
		return raw, err
	}
	var r registrypb.CertifiedResponse
	if err := proto.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if !tamperLeaf(r.HashTree) {
		return nil, errors.New("tampering: the reply has no leaf to change")
	}
	return proto.Marshal(&r)
}

// tamperLeaf flips a bit of the first non-empty leaf under the tree.
func tamperLeaf(m *registrypb.MixedHashTree) bool {
	switch t := m.GetTreeEnum().(type) {
	case *registrypb.MixedHashTree_Fork_:
		return tamperLeaf(t.Fork.LeftTree) || tamperLeaf(t.Fork.RightTree)
	case *registrypb.MixedHashTree_Labeled_:
		return tamperLeaf(t.Labeled.Subtree)
	case *registrypb.MixedHashTree_LeafData:
		if len(t.LeafData) > 0 {
			t.LeafData = bytes.Clone(t.LeafData)
			t.LeafData[len(t.LeafData)-1] ^= 1
			return true
		}
	}
	return false
}

// A reply the copy refuses is not worked around by reading the canister
// through the same endpoint: reconcile, plan (and --generate) and guestos
// sync fail, naming the reply, and say nothing of reading it directly.
func TestARefusedRegistryReplyFailsTheCommandInsteadOfBeingReadAround(t *testing.T) {
	ctx, a := devnetAgent(t, startExampleDevnet(t))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := tampering{a}
	check := func(what string, err error, progress string) {
		t.Helper()
		var r *registrycopy.RefusedError
		if !errors.As(err, &r) || !strings.Contains(err.Error(), "the reply to get_certified_changes_since 0 is refused") {
			t.Errorf("%s: %v, want the refused reply named", what, err)
		}
		if strings.Contains(progress, "directly") {
			t.Errorf("%s read the registry canister around the refused reply:\n%s", what, progress)
		}
	}
	var progress strings.Builder
	_, _, err := reconcileRegistry(ctx, src, &progress)
	check("reconcile", err, progress.String())
	progress.Reset()
	_, err = electedFromCopy(ctx, src, &progress)
	check("guestos sync", err, progress.String())
	progress.Reset()
	_, err = planFromCopy(ctx, &preflight.Fetcher{Registry: nns.RegistryClient{Caller: src}}, &progress)
	check("plan", err, progress.String())
}

// noRootKey is an endpoint the copy cannot be kept for at all (the root key
// cannot be had): that is not a refused reply, and the commands go on
// against the canister, with a warning.
type noRootKey struct{ *agent.Agent }

func (noRootKey) RootKey(context.Context) ([]byte, error) { return nil, errors.New("no root key here") }

func TestACopyThatCannotBeKeptStillFallsBackToTheCanisterWithAWarning(t *testing.T) {
	ctx, a := devnetAgent(t, startExampleDevnet(t))
	var progress strings.Builder
	reg, closeReg, err := reconcileRegistry(ctx, noRootKey{a}, &progress)
	if err != nil || reg == nil {
		t.Fatalf("reconcile without a copy: %v", err)
	}
	closeReg()
	if !strings.Contains(progress.String(), "warning: registry copy: no root key here; reading the registry canister directly") {
		t.Errorf("no warning: %q", progress.String())
	}
}
