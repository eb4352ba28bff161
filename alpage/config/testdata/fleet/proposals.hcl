provider {
  host   = "http://127.0.0.1:4943"
  neuron = 42
}

proposal "add-n2" {
  kind  = "membership"
  title = "Add n2 to app1"

  membership {
    subnet_id = subnet.app1.id
    add { id = node.n2.id }
    remove {
      id    = node.n1.id
      label = node.n1.label
    }
  }
}

proposal "upgrade-app1" {
  kind  = "deploy_guestos"
  title = "Upgrade app1"

  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.current.id
  }
}

proposal "halt-app1" {
  kind  = "update_subnet"
  title = "Halt app1 for recovery"

  update_subnet {
    subnet_id           = subnet.app1.id
    is_halted           = true
    ssh_readonly_access = []
    features {
      canister_sandboxing = false
      http_requests       = true
      sev_enabled         = true
    }
  }
}

proposal "drop-n3" {
  kind  = "remove_nodes"
  title = "Deregister n3"
  remove_nodes {
    node { id = node.n3.id }
  }
}

proposal "drop-old-operator" {
  kind  = "remove_node_operators"
  title = "Remove the old operator"
  remove_node_operators {
    operators = [node_operator.old.id]
  }
}

proposal "drop-gone-provider" {
  kind  = "remove_node_provider"
  title = "Remove the gone provider"
  remove_node_provider {
    node_provider_id = node_provider.gone.id
  }
}
