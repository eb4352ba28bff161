package certificate

import "encoding/hex"

// mainnetRootKeyHex is the IC mainnet root key (the NNS subnet's threshold
// key, tdb26-jop6k-aogll-7ltgs-eruif-6kk7m-qpktf-gdiqx-mxtrf-vb5e6-eqe) in its
// DER form. It is public and never changes; a client that talks to mainnet
// must use this constant rather than a key fetched over the network.
const mainnetRootKeyHex = "308182301d060d2b0601040182dc7c0503010201060c2b0601040182dc7c05030201036100" +
	"814c0e6ec71fab583b08bd81373c255c3c371b2e84863c98a4f1e08b74235d14fb5d9c0cd546d9685f913a0c0b2cc534" +
	"1583bf4b4392e467db96d65b9bb4cb717112f8472e0d5a4d14505ffd7484b01291091c5f87b98883463f98091a0baaae"

// MainnetRootKeyDER returns the IC mainnet root key in DER form.
func MainnetRootKeyDER() []byte {
	b, _ := hex.DecodeString(mainnetRootKeyHex)
	return b
}
