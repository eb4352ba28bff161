package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repository the reference tool (Swiss-Subnet/alpage) managed: its
// resources, its wave 1 proposal with the kind renamed from resize to
// membership as v0.3.0 requires, and the state.json it wrote after
// submitting mainnet proposal 142931. alp must read that state and see the
// proposal in sync, since the payload bytes did not change.
const (
	referenceResources = `subnet "swiss" {
  id    = "3zsyy-cnoqf-tvlun-ymf55-tkpca-ox7uw-kfxoh-7khwq-2gz43-wafem-lqe"
  label = "Swiss Subnet"
}
node "achermann_luzern_1" { id = "eihqt-opds6-5r7xa-hr32z-k2xoa-bh4l4-65kld-v7gk3-bplt5-vmsw2-mqe" }
node "coreledger_zug_1" { id = "ezsx4-peoff-6kofj-yz6vt-gc42v-iugvx-vit2r-edy37-qv4bt-ivcxy-kae" }
node "alpinedc_vaud_1" { id = "g5s3p-l63zo-lsigy-5u4t5-476io-5m62n-5qmuo-pjgv5-pnq4n-uhxhp-7qe" }
node "big_graubunden_1" { id = "lemsa-bnpvg-zzzcq-6uwar-njtds-byn3n-zcb7v-du25b-tktfx-32gc5-zae" }
node "noku_ticino_1" { id = "rumwa-ihvrd-kqzmq-4ainw-birq6-2y4v7-sbqyx-lw3vm-osdhm-nh5hl-cae" }
node "avalution_appenzell_1" { id = "vou34-3jw7y-l2tah-tssac-y5xop-3x3q4-z2ivi-gvmoc-amv7t-akkbz-vae" }
`
	referenceProposals = `provider {
  host   = "https://icp-api.io"
  neuron = 12838523358913392196
}
proposal "swiss-subnet-wave1" {
  kind    = "membership"
  title   = "Resize the Swiss Subnet for the SEV migration (wave 1)"
  membership {
    subnet_id = subnet.swiss.id
    remove { id = node.achermann_luzern_1.id }
    remove { id = node.coreledger_zug_1.id }
    remove { id = node.alpinedc_vaud_1.id }
    remove { id = node.big_graubunden_1.id }
    remove { id = node.noku_ticino_1.id }
    remove { id = node.avalution_appenzell_1.id }
  }
}
`
	referenceStateJSON = `{
  "proposals": {
    "swiss-subnet-wave1": {
      "kind": "resize",
      "proposal_id": 142931,
      "payload_sha256": "8caa2213d641ab88c110fb58676ce59f95d7f8198664ca347abab28a0c53b78b",
      "submitted_by": "o76xi-pjx7c-iyqao-6vavr-cbm5c-jn6mh-t3jwf-o7ha3-el6b3-5gk4z-lae",
      "neuron": 12838523358913392196,
      "host": "https://icp-api.io",
      "submitted_at": "2026-07-17T00:00:00Z"
    }
  }
}
`
)

func TestARepositoryTheReferenceToolManagedListsInSync(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"resources.hcl": referenceResources, "proposals.hcl": referenceProposals, "state.json": referenceStateJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := execute(t, "list", "--config", filepath.Join(dir, "proposals.hcl"), "--state", filepath.Join(dir, "state.json"), "--output", "json")
	if err != nil {
		t.Fatalf("list: %v\n%s", err, out)
	}
	var rows []listRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	if r := rows[0]; r.Sync != "in sync" || r.State == nil || r.State.ProposalID != 142931 {
		t.Fatalf("the reference's wave 1 shows as %+v", r)
	}
	if !strings.HasPrefix(rows[0].PayloadSHA256, "8caa2213") {
		t.Fatalf("payload sha256 %s", rows[0].PayloadSHA256)
	}
}

func TestAFreeTextSubmittedAtTheReferenceRecordedIsShownAsWritten(t *testing.T) {
	dir := t.TempDir()
	freeText := strings.Replace(referenceStateJSON, `"submitted_at": "2026-07-17T00:00:00Z"`, `"submitted_at": "17 July, morning"`, 1)
	for name, content := range map[string]string{"resources.hcl": referenceResources, "proposals.hcl": referenceProposals, "state.json": freeText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := execute(t, "list", "--config", filepath.Join(dir, "proposals.hcl"), "--state", filepath.Join(dir, "state.json"))
	if err != nil || !strings.Contains(out, "142931    -       17 July, morning") {
		t.Fatalf("list: %v\n%s", err, out)
	}
}
