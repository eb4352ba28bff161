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

proposal "add-new-operator" {
  kind  = "add_node_operator"
  title = "Add a second Zurich operator"

  add_node_operator {
    node_operator_id = "e3zag-db5kj-jrtlj-co2j7-eczxr-5urje-gcynm-k27pg-4jmoq-d52pb-kae"
    node_provider_id = node_provider.example.id
    dc_id            = "zh1"
    node_allowance   = 2
    rewardable_nodes = { "type3.1" = 2 }
  }
}

proposal "raise-ge1-allowance" {
  kind  = "update_node_operator_config"
  title = "Raise the Geneva operator's allowance"

  update_node_operator_config {
    node_operator_id = node_operator.ge1_ops.id
    node_allowance   = 5
  }
}

proposal "hostos-node-08" {
  kind  = "deploy_hostos"
  title = "Move node_08 to the newer HostOS"

  deploy_hostos {
    hostos_version_id = "4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"
    node { id = node.node_08.id }
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
