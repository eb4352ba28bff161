package nns

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/nns/registrypb"
)

// FuzzRecordViews: whatever bytes a registry hands over, a view either
// refuses them or reaches a fixed point: what it writes, it reads back and
// writes again byte for byte. Seeds: the conformance vectors.
func FuzzRecordViews(f *testing.F) {
	raw, err := os.ReadFile("testdata/registry.json")
	if err != nil {
		f.Fatal(err)
	}
	var vectors registryVectors
	if err := json.Unmarshal(raw, &vectors); err != nil {
		f.Fatal(err)
	}
	for _, v := range vectors.Vectors {
		b, _ := hex.DecodeString(v.Hex)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, newView := range views {
			first := newView()
			if first.Unmarshal(data) != nil {
				continue
			}
			out := first.Marshal()
			again := newView()
			if err := again.Unmarshal(out); err != nil {
				t.Fatalf("%s: the view's own bytes do not decode: %v", name, err)
			}
			if !bytes.Equal(again.Marshal(), out) {
				t.Fatalf("%s: encoding is not a fixed point", name)
			}
		}
	})
}

// FuzzCertifiedTree: a certified reply's hash tree, however mangled, is
// read or refused with an error; it never panics. The certificate check is
// left out (it is ic/certificate's, and slow under the fuzzer): the tree is
// held against the certified data of the real mainnet reply, its seed.
func FuzzCertifiedTree(f *testing.F) {
	raw, err := os.ReadFile("testdata/registry_certified_delta.json")
	if err != nil {
		f.Fatal(err)
	}
	var fixture certifiedDelta
	if err := json.Unmarshal(raw, &fixture); err != nil {
		f.Fatal(err)
	}
	cert, _ := hex.DecodeString(fixture.CertificateHex)
	treeBytes, _ := hex.DecodeString(fixture.HashTreeHex)
	c, err := certificate.Decode(cert)
	if err != nil {
		f.Fatal(err)
	}
	certified, _ := c.Tree.Lookup([]byte("canister"), registryID.Bytes(), []byte("certified_data"))
	f.Add(treeBytes)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tree registrypb.MixedHashTree
		if proto.Unmarshal(data, &tree) != nil {
			return
		}
		got, err := readCertifiedTree(&tree, certified)
		if err == nil && got == nil {
			t.Fatal("no error and no result")
		}
	})
}
