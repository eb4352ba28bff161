package proposal

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
)

// The reference tool (Swiss-Subnet/alpage) keeps four proposal fixtures
// (nns/testdata/config.hcl and nns/testdata/golden_src/proposals.hcl) and
// recorded one proposal it submitted to mainnet in its state.json. Their ids
// and versions are data; the hashes below are what our encoder makes of them.
// The wave 1 hash is the one the reference tool itself wrote into state.json
// for mainnet proposal 142931, so matching it proves byte compatibility with
// the encoder whose hashes existing state files pin.
const (
	fxSubnet   = "67htk-vfkxp-gn33q-baibq"
	fxNode1    = "5ffj3-jarcq-lruhj-aemtc-sla"
	goldSubnet = "wmzac-nabae-aqcai-baeaq-caiba-eaqca-ibaea-qcaib-aeaqc-aibae-aqc"
	goldNode1  = "uduew-qycai-baeaq-caiba-eaqca-ibaea-qcaib-aeaqc-aibae-aqcai-bae"
	goldNode2  = "dchi6-uidam-bqgay-dambq-gayda-mbqga-ydamb-qgayd-ambqg-aydam-bqg"
	zeroes     = "0000000000000000000000000000000000000000"
)

func membershipOf(subnet string, remove ...string) *config.Proposal {
	m := &kinds.Membership{SubnetID: subnet}
	for _, id := range remove {
		m.Remove = append(m.Remove, kinds.NodeRef{ID: id})
	}
	return &config.Proposal{Name: "m", Kind: config.KindMembership, Title: "t", Body: m}
}

func deployOf(subnet, version string) *config.Proposal {
	return &config.Proposal{Name: "d", Kind: config.KindDeployGuestOS, Title: "t",
		Body: &kinds.DeployGuestOS{SubnetID: subnet, ReplicaVersionID: version}}
}

func TestTheReferenceFixturesHashAsPinned(t *testing.T) {
	cases := []struct {
		name string
		decl *config.Proposal
		hash string
		// bytes, when given, is the whole payload, checked by hand against
		// the Candid spec (type table, field-hash order, LEB128 lengths).
		bytes string
	}{
		{"config.hcl membership-example", membershipOf(fxSubnet, fxNode1),
			"a1d80e1578d4b5731a0556c0f686fb4167575bd4b4a0deb9e89901b9de0d0f70",
			"4449444c026d686c03ddd99b870300bd869d8b046888fe9fc80d000101000108aabbccddee01020301010a1114171a1d202326292c"},
		{"config.hcl deploy-guestos-example", deployOf(fxSubnet, zeroes),
			"d81bd5b4a8694e36808d522ec970f6c1f8f0e7c5373a8d1a331e00d5d32bd481",
			// record {subnet_id (0x4167433d): principal; replica_version_id (0x98a3b7c9): text}
			"4449444c016c02bd869d8b0468c9ef8ec509710100" + "0108aabbccddee010203" + "28" + hex.EncodeToString([]byte(zeroes))},
		{"golden_src membership-fixture", membershipOf(goldSubnet, goldNode1, goldNode2),
			"45cdf3120b7e538b4090946cb1c86a9e2760e49a3b8a4751a332982ba95584cb", ""},
		{"golden_src deploy-guestos-fixture", deployOf(goldSubnet, zeroes),
			"69dd81f0f1b66361ef4b64f1a9cfb719e809a6091465136780916c79192dbd90", ""},
		{"state.json swiss-subnet-wave1 (mainnet proposal 142931)", membershipOf(
			"3zsyy-cnoqf-tvlun-ymf55-tkpca-ox7uw-kfxoh-7khwq-2gz43-wafem-lqe",
			"eihqt-opds6-5r7xa-hr32z-k2xoa-bh4l4-65kld-v7gk3-bplt5-vmsw2-mqe",
			"ezsx4-peoff-6kofj-yz6vt-gc42v-iugvx-vit2r-edy37-qv4bt-ivcxy-kae",
			"g5s3p-l63zo-lsigy-5u4t5-476io-5m62n-5qmuo-pjgv5-pnq4n-uhxhp-7qe",
			"lemsa-bnpvg-zzzcq-6uwar-njtds-byn3n-zcb7v-du25b-tktfx-32gc5-zae",
			"rumwa-ihvrd-kqzmq-4ainw-birq6-2y4v7-sbqyx-lw3vm-osdhm-nh5hl-cae",
			"vou34-3jw7y-l2tah-tssac-y5xop-3x3q4-z2ivi-gvmoc-amv7t-akkbz-vae"),
			"8caa2213d641ab88c110fb58676ce59f95d7f8198664ca347abab28a0c53b78b", ""},
	}
	for _, tc := range cases {
		p, err := Build(tc.decl)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.PayloadSHA256 != tc.hash {
			t.Errorf("%s: payload sha256 %s, want %s", tc.name, p.PayloadSHA256, tc.hash)
		}
		if tc.bytes != "" && hex.EncodeToString(p.Payload) != tc.bytes {
			t.Errorf("%s: payload\n got %x\nwant %s", tc.name, p.Payload, tc.bytes)
		}
	}
}

// A proposal written with literal ids and one written with references to the
// same ids make the same payload: the reference's inline.hcl twin.
func TestReferencesAndLiteralIDsMakeTheSamePayload(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, map[string]string{
		"resources.hcl": `subnet "test" { id = "` + fxSubnet + `" }
node "n1" { id = "` + fxNode1 + `" }
`,
		"proposals.hcl": `proposal "by-reference" {
  kind  = "membership"
  title = "Membership fixture"
  membership {
    subnet_id = subnet.test.id
    remove { id = node.n1.id }
  }
}
proposal "inline" {
  kind  = "membership"
  title = "Membership fixture"
  membership {
    subnet_id = "` + fxSubnet + `"
    remove { id = "` + fxNode1 + `" }
  }
}
`,
	})
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := build(t, c, "by-reference"), build(t, c, "inline")
	if a.PayloadSHA256 != b.PayloadSHA256 || a.PayloadSHA256 != "a1d80e1578d4b5731a0556c0f686fb4167575bd4b4a0deb9e89901b9de0d0f70" {
		t.Fatalf("reference form %s, inline form %s", a.PayloadSHA256, b.PayloadSHA256)
	}
}

// writeConfig lays out a config folder from file name → content and returns
// the proposals.hcl path.
func writeConfig(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "proposals.hcl")
}
