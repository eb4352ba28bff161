package config

// Names indexes the declared resources by id: the name of each block, per
// kind, and each node's block. reconcile and generate both read ids this way.
type Names struct {
	Subnets, Nodes, Operators, Providers, Versions map[string]string
	Node                                           map[string]*Node
}

// NamesOf indexes r.
func NamesOf(r *Resources) Names {
	n := Names{Subnets: map[string]string{}, Nodes: map[string]string{}, Operators: map[string]string{},
		Providers: map[string]string{}, Versions: map[string]string{}, Node: map[string]*Node{}}
	for _, x := range r.Subnets {
		n.Subnets[x.ID] = x.Name
	}
	for _, x := range r.Nodes {
		n.Nodes[x.ID] = x.Name
		n.Node[x.ID] = x
	}
	for _, x := range r.NodeOperators {
		n.Operators[x.ID] = x.Name
	}
	for _, x := range r.NodeProviders {
		n.Providers[x.ID] = x.Name
	}
	for _, x := range r.GuestOSVersions {
		n.Versions[x.ID] = x.Name
	}
	return n
}
