# One proposal per preflight outcome of every kind, against fleet.json.

proposal "grow-app1" {
  kind  = "membership"
  title = "Swap n3 for n4 in app1"
  membership {
    subnet_id = subnet.app1.id
    add { id = node.n4.id }
    remove { id = node.n3.id }
  }
}

proposal "steal-n6" {
  kind  = "membership"
  title = "Add app2's node to app1"
  membership {
    subnet_id = subnet.app1.id
    add { id = node.n6.id }
  }
}

proposal "re-add-n1" {
  kind  = "membership"
  title = "Add the subnet's first member again"
  membership {
    subnet_id = subnet.app1.id
    add { id = node.n1.id }
  }
}

proposal "rollback-app1" {
  kind  = "deploy_guestos"
  title = "Roll app1 back to the previous release"
  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.previous.id
  }
}

proposal "redeploy-app1" {
  kind  = "deploy_guestos"
  title = "Deploy what app1 runs"
  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.current.id
  }
}

proposal "unelected-app1" {
  kind  = "deploy_guestos"
  title = "Deploy a version that was never elected"
  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.never.id
  }
}

proposal "tune-app1" {
  kind  = "update_subnet"
  title = "More canisters and a recovery key for app1"
  update_subnet {
    subnet_id               = subnet.app1.id
    is_halted               = false
    max_number_of_canisters = 60000
    ssh_readonly_access     = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIRecovery recovery@example"]
  }
}

proposal "unhalt-app1" {
  kind  = "update_subnet"
  title = "Unhalt app1, which runs"
  update_subnet {
    subnet_id = subnet.app1.id
    is_halted = false
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

proposal "drop-n5" {
  kind  = "remove_nodes"
  title = "Deregister n5"
  remove_nodes {
    node { id = node.n5.id }
  }
}

proposal "drop-n1" {
  kind  = "remove_nodes"
  title = "Deregister a member of app1"
  remove_nodes {
    node { id = node.n1.id }
  }
}

proposal "drop-op-c" {
  kind  = "remove_node_operators"
  title = "Remove the operator without nodes"
  remove_node_operators {
    operators = [node_operator.op_c.id]
  }
}

proposal "drop-op-a" {
  kind  = "remove_node_operators"
  title = "Remove an operator that still has nodes"
  remove_node_operators {
    operators = [node_operator.op_a.id]
  }
}

proposal "drop-q" {
  kind  = "remove_node_provider"
  title = "Remove provider Q"
  remove_node_provider {
    node_provider_id = node_provider.q.id
  }
}

proposal "drop-p" {
  kind  = "remove_node_provider"
  title = "Remove provider P, which still has operators"
  remove_node_provider {
    node_provider_id = node_provider.p.id
  }
}

proposal "drop-stranger" {
  kind  = "remove_node_provider"
  title = "Remove a provider governance never knew"
  remove_node_provider {
    node_provider_id = node_provider.stranger.id
  }
}
