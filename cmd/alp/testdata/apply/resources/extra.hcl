# What the apply/status end-to-end tests add to the devnet default fleet, whose
# resources.hcl (a link to examples/fleet/resources.hcl) is read beside this folder:
# an operator without nodes, a provider without operators and an unelected version.

node_operator "empty_ops" {
  id       = "sp5zt-ai3iy-6276d-6qiqv-r4t3q-i3mxk-jlaaa-frtfo-6zfs7-wd3i5-4qe"
  label    = "An operator that owns no nodes"
  provider = node_provider.example.id
  dc       = data_center.zh1.id
}

node_provider "gone" {
  id    = "xlbud-wqevv-daemz-63mb5-5qags-cqnxo-keqio-iubrg-4yxaj-g6p6f-uae"
  label = "A provider with no operators left"
}

guestos_version "unelected" {
  id    = "790bb016bef1fc5ebc226e040ef574b29ae87dea"
  label = "release-2026-08-07_03-33-base"
}
