package proposal

import (
	"fmt"
	"io"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// removeNodeProvider is the native governance action AddOrRemoveNodeProvider
// with change ToRemove.
type removeNodeProvider struct {
	provider principal.Principal
}

func newRemoveNodeProvider(r *config.RemoveNodeProvider) (*removeNodeProvider, error) {
	p, err := onePrincipal("node_provider_id", r.NodeProviderID)
	if err != nil {
		return nil, err
	}
	return &removeNodeProvider{provider: p}, nil
}

func (r *removeNodeProvider) payload() any {
	id := r.provider
	return nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &id}}}
}

func (r *removeNodeProvider) render(w io.Writer) {
	fmt.Fprintf(w, "  provider: %s\n", r.provider)
}
