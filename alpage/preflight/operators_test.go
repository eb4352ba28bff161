package preflight

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// copyView is a registry read that can list an operator's nodes from the
// node records, as the certified copy can.
type copyView struct{ nodes map[string][]string }

func (copyView) GetLatestVersion(context.Context) (uint64, error) { return 9, nil }
func (copyView) GetSubnet(context.Context, principal.Principal) (*nns.SubnetRecord, error) {
	return nil, fmt.Errorf("no subnets here")
}
func (copyView) GetValue(context.Context, string, uint64) ([]byte, uint64, bool, error) {
	return []byte{}, 9, true, nil
}
func (copyView) GetNodeOperatorsAndDcsOfNodeProvider(context.Context, principal.Principal) ([]nns.OperatorAndDc, error) {
	return nil, nil
}
func (c copyView) OperatorNodes(_ context.Context, op string) ([]string, error) {
	return c.nodes[op], nil
}

type failingExplorer struct{}

func (failingExplorer) Elected(context.Context, string) (bool, error) {
	return false, fmt.Errorf("unused")
}
func (failingExplorer) OperatorNodes(context.Context, string) ([]string, error) {
	return nil, fmt.Errorf("the explorer must not be asked")
}

// Where the registry read is the certified copy, an operator's nodes come
// from its node records, not the third-party explorer, and a long list of
// them is shortened with a count.
func TestAnOperatorsNodesComeFromTheCopysNodeRecords(t *testing.T) {
	op := id("busy")
	var many []string
	for i := range 12 {
		many = append(many, id(fmt.Sprintf("node-%d", i)))
	}
	f := &Fetcher{Registry: copyView{nodes: map[string][]string{op: many}}, Explorer: failingExplorer{}}
	p := &config.Proposal{Name: "r", Kind: config.KindRemoveNodeOperators, Body: &kinds.RemoveNodeOperators{Operators: []string{op}}}
	r, err := f.Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Checks[0]
	if c.Severity != Flagged || c.Source != "" || !strings.Contains(c.Message, "still owns 12 node(s) ("+many[0]+", ") || !strings.Contains(c.Message, " and 7 more)") {
		t.Fatalf("check %+v", c)
	}
}
