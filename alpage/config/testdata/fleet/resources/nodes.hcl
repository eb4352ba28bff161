node "n1" {
  id       = "5ffj3-jarcq-lruhj-aemtc-sla"
  subnet   = subnet.app1.id
  operator = node_operator.acme_zh1.id
  chip_id  = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
}

node "n2" {
  id              = "ryjl3-tyaaa-aaaaa-aaaba-cai"
  operator        = node_operator.acme_zh1.id
  guestos_version = guestos_version.older.id
}

node "n3" {
  id              = "qoctq-giaaa-aaaaa-aaaea-cai"
  guestos_version = "none"
}
