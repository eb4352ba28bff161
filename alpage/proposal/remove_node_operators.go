package proposal

import (
	"io"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// removeNodeOperators is remove_node_operators: delete operator records,
// named by principal (node_operator_principals_to_remove); the older
// byte-string list stays empty.
type removeNodeOperators struct {
	operators []principal.Principal
}

func newRemoveNodeOperators(r *config.RemoveNodeOperators) (*removeNodeOperators, error) {
	ops, err := principals("operators", r.Operators)
	if err != nil {
		return nil, err
	}
	return &removeNodeOperators{operators: ops}, nil
}

func (r *removeNodeOperators) payload() any {
	return nns.RemoveNodeOperatorsPayload{
		NodeOperatorsToRemove:          [][]byte{},
		NodeOperatorPrincipalsToRemove: &nns.NodeOperatorPrincipals{Principals: r.operators},
	}
}

func (r *removeNodeOperators) render(w io.Writer) { writeList(w, "operator", r.operators) }
