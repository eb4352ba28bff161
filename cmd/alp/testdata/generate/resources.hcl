# The fleet of fleet.json as its operator now wants it; alp plan --generate
# writes the proposals that make the devnet match (cmd/alp/generate_test.go):
# node_03 moves from app1 to app2, node_05 leaves app2, node_06 joins app1,
# app2 rolls out the current release and gets an admin, and node_07, its
# operator and their provider retire.

subnet "app1" {
  id = "x6rmp-4m3v3-io5bv-ve6hr-5pvmp-iacd3-zxsfc-l7hee-luzm7-6ltzy-xqe"
}

subnet "app2" {
  id            = "ttpa5-o77mz-s3v4e-gb5zu-5eycl-2rei5-76tio-54dlx-ifk7i-fgcxa-dae"
  cost_schedule = "free"
  admins        = ["2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"]
}

data_center "zh1" {
  id     = "zh1"
  region = "Europe,CH,Zurich"
}

node_provider "example" {
  id    = "2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"
  label = "Example Provider"
}

node_operator "zh1_ops" {
  id       = "u5p45-2gjxs-56yrl-7uif6-lovs7-dkfck-cgymc-tplna-2cuoz-tyjbh-gae"
  provider = node_provider.example.id
  dc       = data_center.zh1.id
}

node_provider "retiring" {
  id             = "xlbud-wqevv-daemz-63mb5-5qags-cqnxo-keqio-iubrg-4yxaj-g6p6f-uae"
  label          = "Retiring Provider"
  decommissioned = true
}

node_operator "retiring_ops" {
  id       = "sp5zt-ai3iy-6276d-6qiqv-r4t3q-i3mxk-jlaaa-frtfo-6zfs7-wd3i5-4qe"
  provider = node_provider.retiring.id
  dc       = data_center.zh1.id
}

guestos_version "previous" {
  id    = "b14a223a8fa8498a3f75f86d0622d37e24a0a780"
  label = "release-2026-10-16_03-17-base"
}

guestos_version "current" {
  id      = "f7a20dd476ef99474b4f932fb0a24327bdeb4a67"
  label   = "release-2026-11-13_03-21-base"
  default = true
}

node "node_01" {
  id       = "kj5am-xco6a-pfwgh-2xiym-32xzp-d2e5e-m5jtt-tetho-2faxm-zmq7z-iae"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
}

node "node_02" {
  id       = "sbccz-rkvsk-kd3uc-5eyzl-3khte-fxvg6-6wdpe-iw5wx-k7dtf-ye5s6-iae"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
}

node "node_03" {
  id       = "g36rd-weygn-fjzmy-2i5bu-ni5tt-rywcb-q4opg-kv3kb-2k7s3-35yau-yqe"
  subnet   = subnet.app2.id
  operator = node_operator.zh1_ops.id
}

node "node_04" {
  id       = "qczqx-v2fxm-pujid-7odqk-dippe-giwxg-nrcru-ck6pa-5jqfg-4rko3-tqe"
  subnet   = subnet.app2.id
  operator = node_operator.zh1_ops.id
}

node "node_05" {
  id              = "sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe"
  operator        = node_operator.zh1_ops.id
  guestos_version = guestos_version.previous.id
}

node "node_06" {
  id       = "rne7p-hkvut-u4cqs-uwqy7-e5vcb-f76eo-ih2m3-7vvr4-attxm-day4h-xae"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
}

node "node_07" {
  id             = "fa5ih-j7mhe-uttm2-xtsfx-5px47-ttx4c-x7p4t-vtjed-ma2ae-kifdh-nqe"
  operator       = node_operator.retiring_ops.id
  decommissioned = true
}
