package devnet

import "alpnib.dev/ic/principal"

// running is the version a node's status endpoint reports: the fleet's,
// until a deploy_guestos moves the subnet the node is in to another
// version, after which the node runs that one, as a replica upgrades to
// its subnet's version. seeded is each subnet's version as the fleet
// seeded it.
func (d *Devnet) running(node, fleetVersion string, seeded map[string]string) string {
	id, err := principal.Decode(node)
	if err != nil {
		return fleetVersion
	}
	subnet, in, err := d.Registry.SubnetOf(id)
	if err != nil || !in {
		return fleetVersion
	}
	rec, ok, err := d.Registry.Subnet(subnet)
	if err != nil || !ok || rec.ReplicaVersionID == seeded[subnet.String()] {
		return fleetVersion
	}
	return rec.ReplicaVersionID
}

// seededVersions is each fleet subnet's version.
func seededVersions(f *Fleet) map[string]string {
	out := map[string]string{}
	for _, s := range f.Subnets {
		out[s.ID] = s.Version
	}
	return out
}
