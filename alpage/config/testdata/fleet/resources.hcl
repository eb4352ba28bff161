subnet "app1" {
  id          = "67htk-vfkxp-gn33q-baibq"
  label       = "Application subnet 1"
  sev_enabled = true
}

subnet "rented" {
  id            = "2vxsx-fae"
  type          = "application"
  cost_schedule = "free"
  admins        = ["aaaaa-aa"]
}

data_center "zh1" {
  id     = "zh1"
  label  = "Zurich 1"
  region = "Europe,CH,Zurich"
}

node_provider "acme" {
  id    = "em77e-bvlzu-aq"
  label = "ACME"
}

node_provider "gone" {
  id             = "2chl6-4hpzw-vqaaa-aaaaa-c"
  decommissioned = true
}

node_operator "acme_zh1" {
  id       = "rwlgt-iiaaa-aaaaa-aaaaa-cai"
  provider = node_provider.acme.id
  dc       = data_center.zh1.id
}

node_operator "old" {
  id       = "rrkah-fqaaa-aaaaa-aaaaq-cai"
  provider = node_provider.gone.id
}
