# alp plan's test fleet as declared (fleet.json beside this file is the live side).

subnet "app1" {
  id          = "fu2zt-oxzx4-dxcoj-4u45t-47rks-slgwe-sf4io-haiaz-g5exm-7neoa-iae"
  sev_enabled = false
}

subnet "app2" {
  id = "ssmon-no4cw-53l6a-ain4x-pbiaj-rltm4-h2drd-qzlg7-2acon-ggg5o-4qe"
}

node_provider "p" { id = "77tnw-laln5-miwgg-ng3ij-qbj4b-yjyuo-ms4un-tdgri-webtv-32tmp-bae" }
node_provider "q" { id = "sqmdm-tujhu-ck273-35ftd-eq6yc-iwwrg-ag3ya-oi3zg-beurn-mzcld-4ae" }
node_provider "stranger" { id = "dnjrs-fgq6t-v4vmv-ypeb3-kkfcq-wrb66-yhjff-bab3v-c26g2-aye5h-hae" }

node_operator "op_a" { id = "q7cke-jdmyh-jxohe-pn52b-c57j6-55rtk-3mh2v-vm2ni-vsiio-enn7e-tqe" }
node_operator "op_c" { id = "qjyir-gyadb-cyxze-htn5v-pyrtw-rjn7n-knphj-foscz-bxa4p-jh7rq-lqe" }

guestos_version "previous" { id = "1111111111111111111111111111111111111111" }
guestos_version "current" { id = "2222222222222222222222222222222222222222" }
guestos_version "never" { id = "3333333333333333333333333333333333333333" }

node "n1" { id = "otplu-vkdrv-wvjvl-smbfu-at3pq-vmhlv-nyue7-7t23u-c4d74-csgup-7qe" }
node "n3" { id = "i2boy-z7dr2-vac24-7kong-4oohv-z5ec3-vcc7o-zpxwg-jndwa-rwz2e-lae" }
node "n4" { id = "yhgsq-fo73b-ue2wy-hyz2x-yyity-262ia-ealjo-xycpa-ahd37-6ddw4-2qe" }
node "n5" { id = "4b5fd-xfr7b-mawia-ntj66-6ctpo-vpchn-4ucux-yjhvl-zp3k7-w25ii-oqe" }
node "n6" { id = "f46yf-a6ae7-56hgq-2lw7v-zpgqo-dta2k-tb64d-ji67f-hivgd-g5cw2-sae" }
