package proposal

import (
	"io"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// removeNodes is remove_nodes: deregister nodes.
type removeNodes struct {
	nodes []principal.Principal
}

func newRemoveNodes(r *config.RemoveNodes) (*removeNodes, error) {
	nodes, err := principals("node.id", nodeIDs(r.Nodes))
	if err != nil {
		return nil, err
	}
	return &removeNodes{nodes: nodes}, nil
}

func (r *removeNodes) payload() any { return nns.RemoveNodesPayload{NodeIDs: r.nodes} }

func (r *removeNodes) render(w io.Writer) { writeList(w, "node", r.nodes) }
