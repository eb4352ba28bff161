package devnet

import "alpnib.dev/ic/principal"

// seed is what the fleet file seeded, which running compares the registry
// with: each subnet's version, each node's subnet ("" unassigned), and the
// version a node that leaves its subnet runs.
type seed struct {
	subnetVersion map[string]string
	nodeSubnet    map[string]string
	unassigned    string
}

// running is the version a node's status endpoint reports, as a replica
// follows the registry: the fleet's (which may be drift on purpose) while
// the node is where the fleet put it and its subnet runs the fleet's
// version; the subnet's version once a deploy_guestos moves the subnet or
// a membership change moves the node into another subnet; and the
// unassigned version once it has left the subnet it was in.
func (d *Devnet) running(node, fleetVersion string, s seed) string {
	id, err := principal.Decode(node)
	if err != nil {
		return fleetVersion
	}
	subnet, in, err := d.Registry.SubnetOf(id)
	if err != nil {
		return fleetVersion
	}
	seeded := s.nodeSubnet[node]
	if !in {
		if seeded == "" || s.unassigned == "" {
			return fleetVersion
		}
		return s.unassigned
	}
	rec, ok, err := d.Registry.Subnet(subnet)
	if err != nil || !ok {
		return fleetVersion
	}
	if subnet.String() == seeded && rec.ReplicaVersionID == s.subnetVersion[seeded] {
		return fleetVersion
	}
	return rec.ReplicaVersionID
}

// seededFrom reads the seed of f. A node that leaves its subnet runs the
// fleet's unassigned_version; without one it keeps the fleet's version.
func seededFrom(f *Fleet) seed {
	s := seed{subnetVersion: map[string]string{}, nodeSubnet: map[string]string{}, unassigned: f.UnassignedVersion}
	for _, sub := range f.Subnets {
		s.subnetVersion[sub.ID] = sub.Version
		for _, m := range sub.Members {
			s.nodeSubnet[m] = sub.ID
		}
	}
	return s
}
