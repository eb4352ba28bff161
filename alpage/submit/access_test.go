package submit

import (
	"strings"
	"testing"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func TestTheCallerIsTheNeuronsControllerOrAHotkeyOrRefused(t *testing.T) {
	owner, hot, stranger := principal.SelfAuthenticating([]byte("owner")), principal.SelfAuthenticating([]byte("hot")), principal.SelfAuthenticating([]byte("stranger"))
	n := &nns.Neuron{ID: &nns.NeuronID{ID: 42}, Controller: &owner, HotKeys: []principal.Principal{hot}}
	cases := []struct {
		name   string
		caller principal.Principal
		neuron *nns.Neuron
		want   Access
		err    string
	}{
		{"the controller", owner, n, Controller, ""},
		{"a hotkey", hot, n, Hotkey, ""},
		{"a principal that is neither", stranger, n, "", "neither its controller (" + owner.String() + ") nor one of its 1 hotkey(s)"},
		{"a neuron without a controller", stranger, &nns.Neuron{}, "", "neither its controller (none)"},
		{"no neuron at all", owner, nil, "", "no neuron"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ClassifyAccess(c.caller, c.neuron)
			if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("ClassifyAccess = %q, %v; want %q, %q", got, err, c.want, c.err)
			}
		})
	}
}
