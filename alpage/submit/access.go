package submit

import (
	"fmt"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Access is how an identity may propose with a neuron: governance's
// make_proposal accepts the neuron's controller and its hotkeys, nobody
// else.
type Access string

// The two ways in.
const (
	Controller Access = "controller"
	Hotkey     Access = "hotkey"
)

// ClassifyAccess says whether caller is n's controller or one of its
// hotkeys, from the neuron get_full_neuron returned. It is an error when
// caller is neither: governance may show a neuron to others (a neuron it
// manages, say), but would refuse the proposal.
func ClassifyAccess(caller principal.Principal, n *nns.Neuron) (Access, error) {
	if n == nil {
		return "", fmt.Errorf("get_full_neuron returned no neuron")
	}
	if n.Controller != nil && *n.Controller == caller {
		return Controller, nil
	}
	for _, h := range n.HotKeys {
		if h == caller {
			return Hotkey, nil
		}
	}
	controller := "none"
	if n.Controller != nil {
		controller = n.Controller.String()
	}
	return "", fmt.Errorf("%s can read the neuron but is neither its controller (%s) nor one of its %d hotkey(s), so governance would refuse the proposal", caller, controller, len(n.HotKeys))
}
