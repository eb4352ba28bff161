package devnet

import (
	"context"
	"errors"
	"testing"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func TestATwoSubnetDevnetKeepsTheNNSOnTheRootAndCertifiesTheOtherSubnetUnderADelegation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(ctx, Options{Fleet: f, Dir: t.TempDir(), Subnets: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (nns.RegistryClient{Caller: a}).GetLatestVersion(ctx); err != nil {
		t.Fatalf("the registry on the root subnet: %v", err)
	}
	// No devnet canister lives on the second subnet: what is sent there is
	// refused by that subnet, certified under its delegation (the call) or
	// signed by its node, whose key the delegated subnet certifies (the
	// query).
	elsewhere := principal.CanisterID(localnet.RootSubnetLastCanister + 1)
	var re *agent.RejectError
	if _, err := a.Call(ctx, elsewhere, "anything", nil); !errors.As(err, &re) || re.Code != agent.DestinationInvalid {
		t.Errorf("call on the second subnet: %v", err)
	}
	if _, err := a.Query(ctx, elsewhere, "anything", nil); !errors.As(err, &re) || re.Code != agent.DestinationInvalid {
		t.Errorf("query on the second subnet: %v", err)
	}
}
