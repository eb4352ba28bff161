# One proposal of every kind that executes against fleet.json beside this file, and
# some that apply must stop: a sev_enabled change, removing a subnet member and deploying an
# unelected version (the dry run fails), and a no-op.
# The devnet's identity controls neuron 4242.

provider {
  neuron = 4242
}

proposal "add-node-08" {
  kind    = "membership"
  title   = "Add node_08 to app1"
  summary = "Grow app1 by one Geneva node."

  membership {
    subnet_id = subnet.app1.id
    add { id = node.node_08.id }
  }
}

proposal "downgrade-app1" {
  kind  = "deploy_guestos"
  title = "Deploy the previous release to app1"

  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.previous.id
  }
}

proposal "halt-app1" {
  kind  = "update_subnet"
  title = "Halt app1 for a recovery"

  update_subnet {
    subnet_id = subnet.app1.id
    is_halted = true
  }
}

proposal "drop-node-12" {
  kind  = "remove_nodes"
  title = "Deregister node_12"

  remove_nodes {
    node { id = node.node_12.id }
  }
}

proposal "drop-empty-operator" {
  kind  = "remove_node_operators"
  title = "Remove the operator that owns no nodes"

  remove_node_operators {
    operators = [node_operator.empty_ops.id]
  }
}

proposal "drop-gone-provider" {
  kind  = "remove_node_provider"
  title = "Remove the provider with no operators left"

  remove_node_provider {
    node_provider_id = node_provider.gone.id
  }
}

proposal "sev-on-app1" {
  kind  = "update_subnet"
  title = "Turn SEV on for app1"

  update_subnet {
    subnet_id = subnet.app1.id
    features {
      canister_sandboxing = false
      http_requests       = false
      sev_enabled         = true
    }
  }
}

proposal "upgrade-app1" {
  kind  = "deploy_guestos"
  title = "Deploy the current release to app1"

  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.current.id
  }
}

# Stopped by the dry run: node_01 is a member of app1.
proposal "drop-member" {
  kind  = "remove_nodes"
  title = "Deregister node_01, an app1 member"

  remove_nodes {
    node { id = node.node_01.id }
  }
}

# Stopped by the dry run: the version was never elected.
proposal "deploy-unelected" {
  kind  = "deploy_guestos"
  title = "Deploy a version that was never elected"

  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.unelected.id
  }
}
