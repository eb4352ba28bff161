//go:build tools

// Package deps pins the third-party modules the design chose
// (ARCHITECTURE.md, docs/decisions.md) so that go.mod holds them while the
// packages that use them are written in parallel. It is never compiled:
// the tools build tag keeps it out of every build, and go mod tidy still
// counts its imports. Remove a line once real code imports that module.
package deps

import (
	_ "github.com/consensys/gnark-crypto/ecc/bls12-381"
	_ "github.com/decred/dcrd/dcrec/secp256k1/v4"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/fxamacker/cbor/v2"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/minio/minio-go/v7"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/vishvananda/netlink"
	_ "github.com/zclconf/go-cty/cty"
	_ "golang.org/x/sys/unix"
	_ "google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite"
)
