# The fleet `alp devnet` serves by default (examples/fleet/fleet.json), as its operator declares it.
# Run `alp devnet --env-file devnet.env &`, source devnet.env, then run alp in this folder.
# Everything here matches the live network except node_05, which still runs the previous
# release while the default says "current": reconcile reports it as version drift.

subnet "app1" {
  id          = "x6rmp-4m3v3-io5bv-ve6hr-5pvmp-iacd3-zxsfc-l7hee-luzm7-6ltzy-xqe"
  label       = "Application subnet 1"
  type        = "application"
  sev_enabled = false
}

data_center "zh1" {
  id     = "zh1"
  label  = "Zurich Data Hall"
  region = "Europe,CH,Zurich"
}

data_center "ge1" {
  id     = "ge1"
  label  = "Geneva Data Hall"
  region = "Europe,CH,Geneva"
}

node_provider "example" {
  id    = "2axfb-gt45c-dxuwn-i7vfa-veiix-wwo6f-ey5z6-ta72s-xdpdr-3jqqt-kqe"
  label = "Example Provider"
}

node_operator "zh1_ops" {
  id       = "u5p45-2gjxs-56yrl-7uif6-lovs7-dkfck-cgymc-tplna-2cuoz-tyjbh-gae"
  label    = "Zurich operations"
  provider = node_provider.example.id
  dc       = data_center.zh1.id
}

node_operator "ge1_ops" {
  id       = "fm77n-vjlol-2ayji-vfext-lcntu-lfj6m-czqzr-b6w5n-kay5p-necqh-eae"
  label    = "Geneva operations"
  provider = node_provider.example.id
  dc       = data_center.ge1.id
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
  chip_id  = "b173e95959f1eccdcd570cb2e9fca37a33bc0b9bf2fe5e966daab8ced7ee4677e29980d0a7c3d1cae2d4fa328beb3ae9c70e23a6c395c5b4c2c5b1836d1df081"
}

node "node_02" {
  id       = "sbccz-rkvsk-kd3uc-5eyzl-3khte-fxvg6-6wdpe-iw5wx-k7dtf-ye5s6-iae"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
  chip_id  = "6a78f58c42f27d935c4b389b0ad342a8f880f832fea9d721348b34ef5808cad4145decfabbb36dbf72ed3c3c25fb2e74e22fc32ff1e34147bcb99706ea177197"
}

node "node_03" {
  id       = "g36rd-weygn-fjzmy-2i5bu-ni5tt-rywcb-q4opg-kv3kb-2k7s3-35yau-yqe"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
  chip_id  = "5cab35a26aeb9e2d910df73684b60310d1faec2df9cc6247b38bcb9e2c13d4a03955fbad4931c88f77dfa035db7e61a6fa51e80834c491df94e3ba176cbd870d"
}

node "node_04" {
  id       = "qczqx-v2fxm-pujid-7odqk-dippe-giwxg-nrcru-ck6pa-5jqfg-4rko3-tqe"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
}

node "node_05" {
  id       = "sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
}

node "node_06" {
  id       = "rne7p-hkvut-u4cqs-uwqy7-e5vcb-f76eo-ih2m3-7vvr4-attxm-day4h-xae"
  subnet   = subnet.app1.id
  operator = node_operator.zh1_ops.id
}

node "node_07" {
  id       = "fa5ih-j7mhe-uttm2-xtsfx-5px47-ttx4c-x7p4t-vtjed-ma2ae-kifdh-nqe"
  subnet   = subnet.app1.id
  operator = node_operator.ge1_ops.id
}

node "node_08" {
  id       = "lea5s-hn4vi-mj74k-uhunx-sj3ct-s3hrh-xra7u-mc7bo-apknn-bryyv-pae"
  operator = node_operator.ge1_ops.id
}

node "node_09" {
  id       = "d7xc7-fkvqt-cklvz-ptppx-chj6k-uo6pi-ectxz-t3iwg-bp5cv-ncuaf-wae"
  operator = node_operator.ge1_ops.id
}

node "node_10" {
  id       = "kfso2-qsc4g-3utr3-itjyb-iuaer-zafva-6tot5-x7clq-lnz5q-i3srh-kqe"
  operator = node_operator.ge1_ops.id
}

node "node_11" {
  id       = "suqmf-mvmzk-jkjtk-quair-qd55x-7hnb5-rzrre-5i7yu-ddojc-ny5sj-fqe"
  operator = node_operator.zh1_ops.id
}

node "node_12" {
  id       = "duzrk-fjvvw-jhb3e-73vej-iyczl-zwimv-xrnlr-lvg45-ocnlu-yfm6l-nqe"
  operator = node_operator.ge1_ops.id
}
