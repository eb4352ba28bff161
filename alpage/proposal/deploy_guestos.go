package proposal

import (
	"fmt"
	"io"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// deployGuestOS is deploy_guestos_to_all_subnet_nodes.
type deployGuestOS struct {
	subnet  principal.Principal
	version string
}

func newDeployGuestOS(d *config.DeployGuestOS) (*deployGuestOS, error) {
	subnet, err := onePrincipal("subnet_id", d.SubnetID)
	if err != nil {
		return nil, err
	}
	return &deployGuestOS{subnet: subnet, version: d.ReplicaVersionID}, nil
}

func (d *deployGuestOS) payload() any {
	return nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: d.subnet, ReplicaVersionID: d.version}
}

func (d *deployGuestOS) render(w io.Writer) {
	fmt.Fprintf(w, "  subnet:   %s\n", d.subnet)
	fmt.Fprintf(w, "  version:  %s\n", d.version)
}
