package proposal

import (
	"fmt"
	"io"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// membership is change_subnet_membership: add and remove nodes of a subnet.
type membership struct {
	subnet      principal.Principal
	add, remove []principal.Principal
}

func newMembership(m *config.Membership) (*membership, error) {
	subnet, err := onePrincipal("subnet_id", m.SubnetID)
	if err != nil {
		return nil, err
	}
	add, err := principals("add.id", nodeIDs(m.Add))
	if err != nil {
		return nil, err
	}
	remove, err := principals("remove.id", nodeIDs(m.Remove))
	if err != nil {
		return nil, err
	}
	return &membership{subnet: subnet, add: add, remove: remove}, nil
}

func nodeIDs(refs []config.NodeRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

func (m *membership) payload() any {
	return nns.ChangeSubnetMembershipPayload{SubnetID: m.subnet, NodeIDsAdd: m.add, NodeIDsRemove: m.remove}
}

func (m *membership) render(w io.Writer) {
	fmt.Fprintf(w, "  subnet:   %s\n", m.subnet)
	writeList(w, "add", m.add)
	writeList(w, "remove", m.remove)
}
