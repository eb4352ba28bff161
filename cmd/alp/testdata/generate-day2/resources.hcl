# The declaration the day-two loop drives its fleet.json to: the Zurich
# operator's allowance raised to 5, a second operator added, and every node on
# the newer HostOS version (the default).

data_center "zurich" {
  id     = "zh1"
  region = "Europe,CH,Zurich"
}

node_provider "day2" {
  id = "o5r5h-er7ta-4omes-u6zkx-7hyhv-nfj3w-izund-zdiie-62sxv-hllrc-vae"
}

node_operator "zh1_ops" {
  id             = "dbd5l-exnsm-jb7pj-gbueu-gniez-kc7i3-zvjqr-kwn5l-clusy-sqvkh-vqe"
  provider       = node_provider.day2.id
  dc             = "zh1"
  node_allowance = 5
}

node_operator "new_ops" {
  id               = "k3itj-tfbk2-sxpuq-bfeid-kkxwa-cwwo4-fj6pg-hiocx-dmpxc-i4lhk-bqe"
  provider         = node_provider.day2.id
  dc               = "zh1"
  node_allowance   = 1
  rewardable_nodes = { "type3.1" = 1 }
}

hostos_version "older" {
  id = "0c4a9f1d2e3b4c5d6e7f8091a2b3c4d5e6f70819"
}

hostos_version "newer" {
  id      = "9f8e7d6c5b4a39281706f5e4d3c2b1a098f7e6d5"
  default = true
}

node "node_01" {
  id       = "otllv-7lduj-3jnmu-k3dc2-rwjws-zvtyw-5ssju-wn2es-7fbtj-ryftu-eqe"
  operator = node_operator.zh1_ops.id
}

node "node_02" {
  id       = "ztkeg-y77zk-uyay3-qrtlg-5ciib-bj2xr-byqay-faocd-pf7cx-zrk5u-dqe"
  operator = node_operator.zh1_ops.id
}

node "node_03" {
  id       = "zxex6-lcwax-4exos-yf7bs-c6ltg-syhwn-h2rbr-rjfmj-3cr5o-i3s63-bqe"
  operator = node_operator.zh1_ops.id
}

node "node_04" {
  id       = "iyzdu-pyxl3-lpmpb-dupmr-jeghg-dhatq-p6mlt-ypuna-rx5nt-ldhmb-3ae"
  operator = node_operator.zh1_ops.id
}

node "node_05" {
  id       = "4eecw-xy3mk-rpilo-merxy-dekiw-2kq7s-ls5kd-nv5gu-pjbmb-aqqni-uqe"
  operator = node_operator.zh1_ops.id
}

node "node_06" {
  id       = "i6645-gbo2q-rcll7-2hqlo-lrpgy-vzrp7-gd6jy-agac5-mrwyt-hvicq-3qe"
  operator = node_operator.zh1_ops.id
}

node "node_07" {
  id       = "2nj64-fapuv-qqdkh-4hmlp-6jax7-3z4e6-6qzzd-k5hjz-rhk7s-hwhmb-yae"
  operator = node_operator.zh1_ops.id
}

node "node_08" {
  id       = "zaws4-x5saj-zhlak-sqpdc-3wzzq-zptof-3qu5c-rtwcj-ihfog-f6txu-nae"
  operator = node_operator.zh1_ops.id
}

node "node_09" {
  id       = "fdmnm-qfbp7-akfyd-mtkng-kpltz-l367m-ntxd7-wkdks-gk4d3-oycvb-2ae"
  operator = node_operator.zh1_ops.id
}

node "node_10" {
  id       = "twdmq-74rik-d6lqn-dmqiv-g7l3y-223wy-si3fi-2mveb-gk7hk-oa74l-dqe"
  operator = node_operator.zh1_ops.id
}
