# Proposals against the devnet's default fleet (see resources.hcl beside this file).
# The host comes from ALP_HOST (printed by `alp devnet`); neuron 4242 is the one the
# devnet's identity controls.

provider {
  neuron = 4242
}

# Executes: node_08 is registered and in no subnet.
proposal "add-node-08" {
  kind    = "membership"
  title   = "Add node_08 to app1"
  summary = "Grow app1 by one Geneva node."

  membership {
    subnet_id = subnet.app1.id
    add { id = node.node_08.id }
  }
}

# A no-op: app1 already runs the current release.
proposal "upgrade-app1" {
  kind  = "deploy_guestos"
  title = "Deploy the current release to app1"

  deploy_guestos {
    subnet_id          = subnet.app1.id
    replica_version_id = guestos_version.current.id
  }
}

# Executes: node_12 is in no subnet.
proposal "drop-node-12" {
  kind  = "remove_nodes"
  title = "Deregister node_12"

  remove_nodes {
    node { id = node.node_12.id }
  }
}

# Refused by preflight and failed by the dry run: the registry rejects any
# change of sev_enabled after a subnet is created.
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
